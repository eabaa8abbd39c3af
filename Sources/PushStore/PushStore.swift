// PushStore: the device registry in PostgreSQL, through libpq.
//
// Layers, bottom up:
//   SQLQuery, SQLEncodable, SQLDecodable   values ⇄ PostgreSQL binary format; SQL text only from literals
//   PostgresConnection                     one libpq connection, confined to its own thread
//   ConnectionPool                         bounded, lazy, self-healing; the only thing callers share
//   Migrator                               Schemas/sql/NNNN_name.sql under an advisory lock
//   DeviceRegistry                         register, look up, prune: what producers and workers call
