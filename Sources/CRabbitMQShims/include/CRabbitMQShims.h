#ifndef PUSHD_CRABBITMQ_SHIMS_H
#define PUSHD_CRABBITMQ_SHIMS_H

/// Non-variadic forwards for rabbitmq-c calls that Swift cannot make directly.

#include <amqp.h>

/// `amqp_login` is variadic (its SASL arguments); this is the PLAIN mechanism.
amqp_rpc_reply_t pushd_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                        int channel_max, int frame_max, int heartbeat,
                                        const char *user, const char *password);

/// `amqp_login_with_properties` with client properties (connection name, capabilities).
amqp_rpc_reply_t pushd_amqp_login_plain_with_properties(amqp_connection_state_t state, const char *vhost,
                                                        int channel_max, int frame_max, int heartbeat,
                                                        const amqp_table_t *properties,
                                                        const char *user, const char *password);

#endif
