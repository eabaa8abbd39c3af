/// Response headers by lower-case name; a repeated header keeps its last value.
///
/// A response carries the one or two headers its caller reads (`responseHeaderNames`), so
/// they are kept as a short list searched by name: the dictionary they were kept in before
/// allocated its storage and hashed the name twice (stored, then read) for every push's
/// answer, on the HTTP/2 loop thread. The first field is held inline, so an APNs answer,
/// whose one header is `apns-id`, allocates no list at all.
public struct HTTPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    private var first: (name: String, value: String)?
    private var others: [(name: String, value: String)] = []

    public init() {}

    public init(_ headers: [String: String]) {
        for (name, value) in headers { self[name] = value }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    public subscript(name: String) -> String? {
        get {
            if let first, first.name == name { return first.value }
            for index in others.indices where others[index].name == name { return others[index].value }
            return nil
        }
        set {
            if let current = first, current.name == name {
                first = newValue.map { (name, $0) } ?? others.popLast()
                return
            }
            if let index = others.firstIndex(where: { $0.name == name }) {
                if let newValue { others[index].value = newValue } else { others.remove(at: index) }
                return
            }
            guard let newValue else { return }
            if first == nil { first = (name, newValue) } else { others.append((name, newValue)) }
        }
    }

    /// The names present, in the order they first arrived.
    public var names: [String] { (first.map { [$0.name] } ?? []) + others.map(\.name) }

    public var isEmpty: Bool { first == nil }

    public mutating func removeAll() {
        first = nil
        if !others.isEmpty { others.removeAll() }
    }

    /// The same names with the same values, in any order.
    public static func == (left: HTTPHeaders, right: HTTPHeaders) -> Bool {
        let names = left.names
        return names.count == right.names.count && names.allSatisfy { left[$0] == right[$0] }
    }

    public var description: String {
        "[" + names.map { "\($0): \(self[$0] ?? "")" }.joined(separator: ", ") + "]"
    }
}
