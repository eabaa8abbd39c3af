import Foundation
import PushQueue
import PushTestSupport
import Testing

/// The Swift declarations and `Deploy/rabbitmq/definitions.json` must agree argument for
/// argument: whichever creates the objects first, the other's declaration must match or the
/// broker answers 406 PRECONDITION_FAILED.
@Suite("Topology matches Deploy/rabbitmq/definitions.json")
struct TopologyDefinitionsTests {
    struct Definitions: Decodable {
        struct Exchange: Decodable {
            let name, vhost, type: String
            let durable, auto_delete, `internal`: Bool
            let arguments: [String: JSONArgument]
        }

        struct Queue: Decodable {
            let name, vhost: String
            let durable, auto_delete: Bool
            let arguments: [String: JSONArgument]
        }

        struct Binding: Decodable {
            let source, vhost, destination, destination_type, routing_key: String
            let arguments: [String: JSONArgument]
        }

        let exchanges: [Exchange]
        let queues: [Queue]
        let bindings: [Binding]
    }

    /// A definitions argument: RabbitMQ treats JSON numbers as integers and strings as
    /// long strings, exactly what HeaderValue.int and .string encode to.
    enum JSONArgument: Decodable, Equatable {
        case string(String)
        case int(Int64)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) {
                self = .int(number)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        var headerValue: HeaderValue {
            switch self {
            case .string(let text): return .string(text)
            case .int(let number): return .int(number)
            }
        }
    }

    private func definitions() throws -> Definitions {
        let url = BuildProducts.repositoryRoot.appendingPathComponent("Deploy/rabbitmq/definitions.json")
        return try JSONDecoder().decode(Definitions.self, from: Data(contentsOf: url))
    }

    @Test("exchanges: names, types, durable, not auto-deleted, not internal, no arguments")
    func exchanges() throws {
        let file = try definitions()
        let production = Topology.production
        #expect(file.exchanges.map(\.name).sorted() == production.exchanges.map(\.name).sorted())
        for exchange in production.exchanges {
            let defined = try #require(file.exchanges.first { $0.name == exchange.name })
            #expect(defined.vhost == "/")
            #expect(defined.type == exchange.kind.rawValue)
            #expect(defined.durable == exchange.durable)
            #expect(!defined.auto_delete && !defined.internal)
            #expect(defined.arguments.isEmpty)
        }
    }

    @Test("queues: every argument identical, none missing, none extra")
    func queues() throws {
        let file = try definitions()
        let production = Topology.production
        #expect(file.queues.map(\.name).sorted() == production.queues.map(\.name).sorted())
        for queue in production.queues {
            let defined = try #require(file.queues.first { $0.name == queue.name })
            #expect(defined.durable == queue.durable && !defined.auto_delete)
            #expect(defined.arguments.mapValues(\.headerValue) == queue.arguments, "arguments of \(queue.name)")
        }
    }

    @Test("bindings: same exchange, queue and routing key, no arguments")
    func bindings() throws {
        let file = try definitions()
        struct Key: Hashable { let exchange, queue, routingKey: String }
        let defined = Set(file.bindings.map { binding -> Key in
            #expect(binding.destination_type == "queue" && binding.arguments.isEmpty)
            return Key(exchange: binding.source, queue: binding.destination, routingKey: binding.routing_key)
        })
        let declared = Set(Topology.production.bindings.map { Key(exchange: $0.exchange, queue: $0.queue, routingKey: $0.routingKey) })
        #expect(defined == declared)
    }
}
