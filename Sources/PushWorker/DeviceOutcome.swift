import PushCrypto
import PushDelivery
import PushModel

/// What became of one device of a job, in the terms the follow-up planner acts on.
enum DeviceOutcome: Sendable, Equatable {
    /// Sent (or refused locally in the provider's own terms): the provider's verdict.
    case sent(DeliveryOutcome)
    /// Skipped: the device's registered public key cannot be used. Nothing was sent.
    case keyInvalid(PublicKeyError)
    /// Skipped: sealing failed for another reason (an OpenSSL failure, not the input).
    case sealingFailed(String)
    /// Nothing sent, by rule: a Live Activity job's iOS device without the token it needs,
    /// or its Android device without `android_fallback`. Counted apart from deliveries.
    case skipped(LiveActivitySkip)
    /// Nothing sent: the message came past the job's expiry.
    case expired

    /// The `outcome` label of `pushd_deliveries_total`.
    var label: String {
        switch self {
        case .sent(let outcome): outcome.label
        case .keyInvalid: "key_invalid"
        case .sealingFailed: "rejected"
        case .skipped: "skipped"
        case .expired: "expired"
        }
    }

    /// A short reason for logs (never private data).
    var problem: String? {
        switch self {
        case .sent(.delivered), .skipped: nil
        case .sent(let outcome): "\(outcome.label): \(outcome.reason)"
        case .keyInvalid(let error): "key_invalid: \(error)"
        case .sealingFailed(let why): "rejected: encryption failed: \(why)"
        case .expired: "expired: the job's expiry passed before this attempt"
        }
    }
}

/// One device and its outcome.
struct DeviceResult: Sendable, Equatable {
    let device: Device
    let outcome: DeviceOutcome
}
