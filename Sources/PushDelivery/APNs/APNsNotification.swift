import Foundation
import PushRuntime

/// The push types APNs knows, with the topic suffix each one requires.
public enum APNsPushType: String, Sendable, CaseIterable {
    case alert, background, liveactivity, voip, pushtotalk, location, complication, fileprovider, mdm, widgets, controls

    /// Appended to the bundle id to form `apns-topic`.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .location, .mdm: ""
        case .liveactivity: ".push-type.liveactivity"
        case .voip: ".voip"
        case .pushtotalk: ".voip-ptt"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The payload limit for this push type.
    public var payloadLimit: Int { self == .voip ? 5120 : 4096 }
}

public enum APNsEnvironment: String, Sendable {
    case production, sandbox

    public var baseURL: String {
        switch self {
        case .production: "https://api.push.apple.com"
        case .sandbox: "https://api.sandbox.push.apple.com"
        }
    }
}

/// One push to one device, with every header APNs reads.
public struct APNsNotification: Sendable {
    public enum Priority: Int, Sendable {
        /// Deliver immediately (the default for alerts).
        case immediate = 10
        /// Power-aware delivery; required for background pushes.
        case conservesPower = 5
        /// Never wakes the device.
        case low = 1
    }

    public var deviceToken: String
    /// The app's bundle id; the push type's suffix is added when sending.
    public var bundleID: String
    public var environment: APNsEnvironment
    public var pushType: APNsPushType
    public var priority: Priority
    /// Epoch seconds after which APNs stops trying; 0 = try once; nil = APNs's default.
    public var expiration: Int64?
    /// Replaces an earlier notification with the same id on the device (≤ 64 bytes).
    public var collapseID: String?
    /// Our id for this push (lowercase UUID); APNs echoes it back.
    public var apnsID: UUID
    public var payload: [UInt8]

    public init(
        deviceToken: String, bundleID: String, environment: APNsEnvironment, pushType: APNsPushType = .alert,
        priority: Priority = .immediate, expiration: Int64? = nil, collapseID: String? = nil, apnsID: UUID = APNsIdentifier.random(),
        payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.bundleID = bundleID
        self.environment = environment
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    public var topic: String { bundleID + pushType.topicSuffix }

    /// Request problems we can see without asking APNs, reported as the reason APNs
    /// would give. Sending them anyway would count against the connection.
    var localProblem: DeliveryOutcome? {
        if deviceToken.isEmpty || deviceToken.utf8.count % 2 != 0 || !Self.isHex(deviceToken) {
            return .invalidToken(reason: APNsReason.badDeviceToken.description, invalidSince: nil)
        }
        if let collapseID, collapseID.utf8.count > 64 {
            return .rejected(reason: APNsReason.badCollapseID.description, status: 400)
        }
        if pushType == .background && priority != .conservesPower {
            return .rejected(reason: APNsReason.badPriority.description, status: 400)
        }
        if payload.count > pushType.payloadLimit {
            return .rejected(reason: APNsReason.payloadTooLarge.description, status: 413)
        }
        return nil
    }

    /// Whether the token is all hex digits, over the string's contiguous bytes:
    /// `utf8.allSatisfy` walked the generic iterator, an index at a time, for the 64
    /// characters of every push's token.
    static func isHex(_ token: String) -> Bool {
        token.withUTF8InPlace { bytes in
            for byte in bytes where !byte.isHexDigit { return false }
            return true
        }
    }

    /// The headers whose values are new on every push: the device path and our apns-id.
    static let uniqueHeaderNames = [":path", "apns-id"]

    /// The request headers, in APNs's names, that every push with the same provider token
    /// and `SharedHeadersKey` sends; `ownHeaders` adds the rest.
    /// `authorization` is the header's whole value (`BearerToken.authorization`).
    func sharedHeaders(authorization: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            ("authorization", authorization),
            ("apns-push-type", pushType.rawValue),
            ("apns-topic", topic),
            ("apns-priority", String(priority.rawValue)),
            ("content-type", "application/json"),
        ]
        if let expiration { headers.append(("apns-expiration", String(expiration))) }
        if let collapseID { headers.append(("apns-collapse-id", collapseID)) }
        return headers
    }

    /// The headers of this push alone: our apns-id.
    var ownHeaders: [(name: String, value: String)] { [("apns-id", APNsIdentifier.lowercaseString(apnsID))] }

    /// What decides `sharedHeaders`, besides the provider token: the same for every device
    /// of a job (of one platform and environment).
    struct SharedHeadersKey: Hashable, Sendable {
        let bundleID: String
        let pushType: APNsPushType
        let priority: Priority
        let expiration: Int64?
        let collapseID: String?
    }

    var sharedHeadersKey: SharedHeadersKey {
        SharedHeadersKey(bundleID: bundleID, pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID)
    }
}

extension UInt8 {
    /// 0-9, A-F or a-f. Tested on each of a push's 64 token bytes, so in two comparisons
    /// (setting bit 5 folds A-F onto a-f, and nothing else onto them) rather than through
    /// three ranges' `contains`, which was a call per byte.
    var isHexDigit: Bool {
        self &- 48 < 10 || (self | 0x20) &- 97 < 6
    }
}
