import PushDelivery
import PushModel
import PushRuntime

/// The APNs and FCM clients of every configured app, side by side: one `APNsClient` per
/// team key (APNs binds a connection to a team), shared by that team's bundle ids, and one
/// `FCMClient` per Firebase project.
public final class DeliveryRouter: Sendable {
    private let apnsByBundle: [String: APNsClient]
    private let fcmByProject: [String: FCMClient]
    private let apnsClients: [APNsClient]
    private let fcmClients: [FCMClient]
    /// A deployment routes to a handful of apps, usually one of each kind: then every push
    /// finds its client by comparing ids (some 20 bytes each), not by hashing one, and a
    /// dictionary serves only larger sets. nil when there are more than `fewest`.
    private let fewAPNs: [(bundleID: String, client: APNsClient)]?
    private let fewFCM: [FCMClient]?
    private static let fewest = 4

    /// - Parameters:
    ///   - apns: each client with the bundle ids it may push to.
    ///   - fcm: the clients; each serves its own project id.
    public init(apns: [(client: APNsClient, bundleIDs: [String])], fcm: [FCMClient]) {
        var byBundle: [String: APNsClient] = [:]
        for entry in apns {
            for bundle in entry.bundleIDs { byBundle[bundle] = entry.client }
        }
        apnsByBundle = byBundle
        apnsClients = apns.map(\.client)
        fcmClients = fcm
        fcmByProject = Dictionary(fcm.map { ($0.projectID, $0) }, uniquingKeysWith: { first, _ in first })
        fewAPNs = byBundle.count <= Self.fewest ? byBundle.map { ($0.key, $0.value) } : nil
        fewFCM = fcmByProject.count <= Self.fewest ? Array(fcmByProject.values) : nil
    }

    /// The thread that sends the device's pushes, as a task executor; nil when its client has
    /// none (the libcurl engine) or there is no client for its app (the push is refused).
    func loopExecutor(for device: Device) -> (any TaskExecutor)? {
        switch device.platform {
        case .ios: apns(for: device.appID)?.loopExecutor
        case .android: fcm(for: device.appID)?.loopExecutor
        }
    }

    /// The thread to seal the device's push on with `sealing_threads` on the loops: its
    /// client's loop, unless sealing may run OpenSSL's full check of its key
    /// (`Device.publicKeyMayNeedFullCheck`), 4-7 ms during which that loop would neither send
    /// nor read for any of its connections; nil then, and such devices go to the pool.
    func sealingExecutor(for device: Device) -> (any TaskExecutor)? {
        device.publicKeyMayNeedFullCheck ? nil : loopExecutor(for: device)
    }

    /// How many HTTP/2 loop threads pushes are routed to, and so sealed on with
    /// `sealing_threads` on the loops: one per client on the nghttp2 engine, counting only
    /// clients some app reaches (a second client for a project id gets no pushes).
    var loopThreadCount: Int {
        let routed = apnsByBundle.values.compactMap(\.loopExecutor) + fcmByProject.values.compactMap(\.loopExecutor)
        return Set(routed.map { ObjectIdentifier($0 as AnyObject) }).count
    }

    func apns(for bundleID: String) -> APNsClient? {
        if let few = fewAPNs { return few.first { $0.bundleID == bundleID }?.client }
        return apnsByBundle[bundleID]
    }

    func fcm(for projectID: String) -> FCMClient? {
        if let few = fewFCM { return few.first { $0.projectID == projectID } }
        return fcmByProject[projectID]
    }

    /// Every client's HTTP/2 loop, to run in the service group before the services that
    /// send (so they stop after those have drained).
    public var services: [any Service] { apnsClients + fcmClients }
}
