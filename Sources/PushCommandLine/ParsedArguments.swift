/// `--name value` options and `--flag` switches after a subcommand, checked against what the
/// subcommand declares so a typo is an error rather than a silently ignored option.
public struct ParsedArguments {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []
    public private(set) var positional: [String] = []

    /// - Parameters:
    ///   - options: names taking a value (without `--`).
    ///   - switches: names taking none.
    public init(_ arguments: [String], options: Set<String>, switches: Set<String> = []) throws(CLIError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else {
                positional.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if switches.contains(name), inlineValue == nil {
                flags.insert(name)
            } else if options.contains(name) {
                guard let value = inlineValue ?? remaining.popFirst() else {
                    throw .usage("option --\(name) needs a value")
                }
                values[name] = value
            } else {
                throw .usage("unknown option --\(name)")
            }
        }
    }

    public subscript(option: String) -> String? { values[option] }

    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    public func required(_ option: String) throws(CLIError) -> String {
        guard let value = values[option] else { throw .usage("missing required option --\(option)") }
        return value
    }

    public func integer(_ option: String, default fallback: Int, minimum: Int = 1) throws(CLIError) -> Int {
        guard let text = values[option] else { return fallback }
        guard let value = Int(text), value >= minimum else {
            throw .usage("--\(option) must be an integer ≥ \(minimum), got \"\(text)\"")
        }
        return value
    }

    public func double(_ option: String, default fallback: Double) throws(CLIError) -> Double {
        guard let text = values[option] else { return fallback }
        guard let value = Double(text), value > 0 else {
            throw .usage("--\(option) must be a positive number, got \"\(text)\"")
        }
        return value
    }
}

/// A command-line failure: `usage` prints the command's help hint and exits 64 (EX_USAGE),
/// `failure` exits 1.
public enum CLIError: Error {
    case usage(String)
    case failure(String)
}
