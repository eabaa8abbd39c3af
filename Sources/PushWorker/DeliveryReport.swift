import PushModel

/// What became of a job's devices, kept small however large the job: the devices that need
/// a follow-up or a log line in full, the delivered ones only counted. A 10,000-recipient
/// job does not hold a result per delivered device until it is settled.
struct DeliveryReport: Sendable, Equatable {
    /// Every device whose outcome was not `delivered`, for the planner and the log.
    private(set) var results: [DeviceResult] = []
    /// Delivered devices per platform.
    private(set) var delivered: [Platform: Int] = [:]
    /// The delivered devices' ids per platform, kept only for a job whose producer asked for
    /// `job.completed` (its outcome tally names every device): 8 bytes a device.
    private(set) var deliveredIDs: [Platform: [Int64]] = [:]
    let keepsDeliveredIDs: Bool

    init(_ results: [DeviceResult] = [], keepingDeliveredIDs: Bool = false) {
        keepsDeliveredIDs = keepingDeliveredIDs
        for result in results { add(result) }
    }

    mutating func add(_ result: DeviceResult) {
        if case .sent(.delivered) = result.outcome {
            delivered[result.device.platform, default: 0] += 1
            if keepsDeliveredIDs { deliveredIDs[result.device.platform, default: []].append(result.device.id) }
        } else {
            results.append(DeviceResult(device: result.device.withoutPublicKey, outcome: result.outcome))
        }
    }

    var deviceCount: Int { results.count + delivered.values.reduce(0, +) }
}
