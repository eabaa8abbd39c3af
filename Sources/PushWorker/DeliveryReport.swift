import PushModel

/// What became of a job's devices, kept small however large the job: the devices that need
/// a follow-up or a log line in full, the delivered ones only counted. A 10,000-recipient
/// job does not hold a result per delivered device until it is settled.
struct DeliveryReport: Sendable, Equatable {
    /// Every device whose outcome was not `delivered`, for the planner and the log.
    private(set) var results: [DeviceResult] = []
    /// Delivered devices per platform (those with none left out), read once per job.
    var delivered: [Platform: Int] {
        var counts: [Platform: Int] = [:]
        if deliveredCount.ios > 0 { counts[.ios] = deliveredCount.ios }
        if deliveredCount.android > 0 { counts[.android] = deliveredCount.android }
        return counts
    }
    /// The counts behind `delivered`, a field per platform: the dictionary they were kept in
    /// hashed the platform on every delivered push, on the HTTP/2 loop thread that reports it.
    private var deliveredCount = PlatformCounts()
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
            switch result.device.platform {
            case .ios: deliveredCount.ios += 1
            case .android: deliveredCount.android += 1
            }
            if keepsDeliveredIDs { deliveredIDs[result.device.platform, default: []].append(result.device.id) }
        } else {
            results.append(DeviceResult(device: result.device.withoutPublicKey, outcome: result.outcome))
        }
    }

    var deviceCount: Int { results.count + deliveredCount.ios + deliveredCount.android }

    private struct PlatformCounts: Sendable, Equatable {
        var ios = 0
        var android = 0
    }
}
