import PushModel

/// What became of a job's devices, kept small however large the job: the devices that need
/// a follow-up or a log line in full, the delivered ones only counted. A 10,000-recipient
/// job does not hold a result per delivered device until it is settled.
struct DeliveryReport: Sendable, Equatable {
    /// Every device whose outcome was not `delivered`, for the planner and the log.
    private(set) var results: [DeviceResult] = []
    /// Delivered devices per platform.
    private(set) var delivered: [Platform: Int] = [:]

    init(_ results: [DeviceResult] = []) {
        for result in results { add(result) }
    }

    mutating func add(_ result: DeviceResult) {
        if case .sent(.delivered) = result.outcome {
            delivered[result.device.platform, default: 0] += 1
        } else {
            results.append(DeviceResult(device: result.device.withoutPublicKey, outcome: result.outcome))
        }
    }

    var deviceCount: Int { results.count + delivered.values.reduce(0, +) }
}
