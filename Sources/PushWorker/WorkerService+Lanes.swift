extension WorkerService {
    /// How a worker shares itself between the two lanes.
    struct Lanes: Sendable {
        /// Urgent jobs held at once.
        var urgentPrefetch: UInt16
        /// Bulk jobs held at once, apart from the urgent ones: a bulk backlog fills at most
        /// these slots, so an urgent job is taken as soon as it arrives.
        var bulkPrefetch: UInt16
        /// Jobs with more recipients are split into chunks of this many (`WorkerService+Split`).
        var chunkSize: Int
    }
}
