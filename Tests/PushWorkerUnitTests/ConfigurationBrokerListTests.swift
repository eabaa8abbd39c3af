import Foundation
import PushQueue
import PushWorker
import Testing

@Suite("Configuration: several brokers (no servers)")
struct ConfigurationBrokerListTests {
    @Test("amqp_url in the config file may be an array of URLs; the environment's comma-separated list wins")
    func amqpURLArray() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushd-brokers-\(UUID().uuidString).json")
        let json = #"{"amqp_url": ["amqp://u:p@rabbit-1:5672/%2f", "amqp://u:p@rabbit-2:5672/%2f"], "database_url": "postgresql://localhost/pushd", "allow_insecure_transport": true}"#
        try json.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let fromFile = try WorkerConfiguration.load(file: file.path, environment: [:], needsDelivery: false)
        let endpoints = try AMQPConfiguration(url: fromFile.amqpURL, environment: [:]).endpoints
        #expect(endpoints.map(\.description) == ["rabbit-1:5672", "rabbit-2:5672"])

        let fromEnvironment = try WorkerConfiguration.load(
            file: file.path, environment: ["PUSHD_AMQP_URL": "amqp://u:p@a:5672/%2f,amqp://u:p@b:5673/%2f"], needsDelivery: false)
        let overridden = try AMQPConfiguration(url: fromEnvironment.amqpURL, environment: [:]).endpoints
        #expect(overridden.map(\.description) == ["a:5672", "b:5673"])
    }

    @Test("an amqp_url that is neither a string nor an array of strings is a configuration problem")
    func amqpURLWrongType() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushd-brokers-\(UUID().uuidString).json")
        try #"{"amqp_url": 5672, "database_url": "postgresql://localhost/pushd"}"#.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect {
            _ = try WorkerConfiguration.load(file: file.path, environment: [:], needsDelivery: false)
        } throws: { error in
            "\(error)".contains("amqp_url must be a string")
        }
    }
}
