import Foundation
import PushQueue
import PushStore

extension WorkerConfiguration {
    /// Safe defaults: RabbitMQ and PostgreSQL over TLS unless every host is loopback or the
    /// operator set `allow_insecure_transport`; APNs, FCM and OAuth only over `https`,
    /// always (the emulator serves https too). Each URL is judged by the parser that
    /// connects with it.
    func transportProblems(needsDatabase: Bool) -> [String] {
        var problems: [String] = []
        if !allowInsecureTransport {
            if let amqp = try? AMQPConfiguration(url: amqpURL), let problem = amqp.insecureTransportProblem {
                problems.append(problem)
            }
            if needsDatabase, let store = try? StoreConfiguration(url: databaseURL), let problem = store.insecureTransportProblem {
                problems.append(problem)
            }
        }
        for (index, credentials) in apns.enumerated() {
            for (key, url) in [("base_url", credentials.baseURL), ("production_url", credentials.productionURL), ("sandbox_url", credentials.sandboxURL)] {
                if let url, !Self.isHTTPS(url) { problems.append("apns[\(index)].\(key) must be an https:// URL") }
            }
        }
        for (index, credentials) in fcm.enumerated() {
            if let url = credentials.baseURL, !Self.isHTTPS(url) { problems.append("fcm[\(index)].base_url must be an https:// URL") }
            if !Self.isHTTPS(credentials.account.tokenURI) {
                problems.append("fcm[\(index)]: the service account's token_uri must be an https:// URL")
            }
        }
        return problems
    }

    static func isHTTPS(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else { return false }
        return components.scheme?.lowercased() == "https"
    }
}
