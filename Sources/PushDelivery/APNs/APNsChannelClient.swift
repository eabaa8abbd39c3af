import Foundation
import PushRuntime

/// APNs broadcast channel management (iOS 18): create, read, list and delete the channels a
/// Live Activity broadcast is sent to. Apple serves it on its own hosts
/// (`api-manage-broadcast[.sandbox].push.apple.com`, ports 2196 / 2195), with token
/// authentication like pushes. At most 10,000 channels per app and environment: delete a
/// channel when its event is over.
public final class APNsChannelClient: Sendable {
    /// What a channel keeps for devices that are offline.
    public enum MessageStoragePolicy: Int, Sendable {
        /// Nothing stored: broadcasts need `apns-expiration: 0` (or none).
        case noMessageStored = 0
        /// The most recent broadcast is kept for devices that are offline.
        case mostRecentMessageStored = 1
    }

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// APNs answered with an error (`reason` verbatim, e.g. `ChannelNotRegistered`).
        case refused(status: Int, reason: String)
        case transport(String)
        case credentials(String)

        public var description: String {
            switch self {
            case .refused(let status, let reason): "APNs channel management refused the request: \(status) \(reason)"
            case .transport(let why): "APNs channel management unreachable: \(why)"
            case .credentials(let why): "cannot sign the provider token: \(why)"
            }
        }
    }

    private let configuration: APNsClient.Configuration
    private let http: HTTP2Client
    private let tokens: APNsTokenProvider

    /// `configuration.baseURLOverride` replaces both management hosts (e.g. the emulator's
    /// `channels_url`).
    public init(configuration: APNsClient.Configuration, logger: Logger = Logger(label: "apns-channels")) throws(DeliveryConfigurationError) {
        self.configuration = configuration
        do {
            tokens = try APNsTokenProvider(
                teamID: configuration.teamID, keyID: configuration.keyID, privateKeyPEM: configuration.privateKeyPEM)
        } catch {
            throw .invalidCredentials("APNs key \(configuration.keyID): \(error)")
        }
        do { http = try HTTP2Client(configuration: configuration.http.naming("pushd-h2-chan"), logger: logger) } catch {
            throw .transportUnavailable("\(error)")
        }
        http.start()
    }

    public static func baseURL(_ environment: APNsEnvironment) -> String {
        switch environment {
        case .production: "https://api-manage-broadcast.push.apple.com:2196"
        case .sandbox: "https://api-manage-broadcast.sandbox.push.apple.com:2195"
        }
    }

    /// Creates a channel; returns its id (base64), which broadcasts and the app use.
    public func create(
        bundleID: String, environment: APNsEnvironment, storage: MessageStoragePolicy
    ) async throws(Failure) -> String {
        let body = #"{"message-storage-policy":\#(storage.rawValue),"push-type":"LiveActivity"}"#
        let response = try await send(.post, "/1/apps/\(bundleID)/channels", environment: environment, body: Array(body.utf8))
        guard response.status == 201, let channel = response.headers["apns-channel-id"], !channel.isEmpty else {
            throw Self.failure(response)
        }
        return channel
    }

    /// The storage policy of an existing channel.
    public func read(bundleID: String, environment: APNsEnvironment, channelID: String) async throws(Failure) -> MessageStoragePolicy {
        let response = try await send(.get, "/1/apps/\(bundleID)/channels", environment: environment, channelID: channelID)
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        guard response.status == 200, let raw = object?["message-storage-policy"] as? Int,
              let policy = MessageStoragePolicy(rawValue: raw)
        else { throw Self.failure(response) }
        return policy
    }

    /// Every channel of the app in that environment.
    public func list(bundleID: String, environment: APNsEnvironment) async throws(Failure) -> [String] {
        let response = try await send(.get, "/1/apps/\(bundleID)/all-channels", environment: environment)
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        guard response.status == 200, let channels = object?["channels"] as? [String] else { throw Self.failure(response) }
        return channels
    }

    public func delete(bundleID: String, environment: APNsEnvironment, channelID: String) async throws(Failure) {
        let response = try await send(.delete, "/1/apps/\(bundleID)/channels", environment: environment, channelID: channelID)
        guard response.status == 204 || response.status == 200 else { throw Self.failure(response) }
    }

    public func shutdown() async {
        await http.shutdown()
    }

    private func send(
        _ method: HTTPRequest.Method, _ path: String, environment: APNsEnvironment, channelID: String? = nil, body: [UInt8] = []
    ) async throws(Failure) -> HTTPResponse {
        let bearer: BearerToken
        do { bearer = try tokens.bearer() } catch { throw .credentials("\(error)") }
        var headers: [(name: String, value: String)] = [
            ("authorization", bearer.authorization), ("apns-request-id", UUID().uuidString.lowercased()),
        ]
        if let channelID { headers.append(("apns-channel-id", channelID)) }
        if method == .post { headers.append(("content-type", "application/json")) }
        let url = (configuration.baseURLOverride ?? Self.baseURL(environment)) + path
        do {
            return try await http.send(HTTPRequest(method: method, url: url, headers: headers, body: body, timeout: configuration.requestTimeout))
        } catch {
            throw .transport("\(error)")
        }
    }

    private static func failure(_ response: HTTPResponse) -> Failure {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return .refused(status: response.status, reason: object?["reason"] as? String ?? bodyExcerpt(response.body))
    }
}
