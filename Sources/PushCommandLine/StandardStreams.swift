import Foundation

/// Byte-exact standard input and output: envelopes and plaintexts pass through unchanged.
public enum StandardStreams {
    public static func readAllInput() -> Data {
        FileHandle.standardInput.readDataToEndOfFile()
    }

    public static func write(_ data: some DataProtocol) {
        FileHandle.standardOutput.write(Data(data))
    }

    public static func write(line: String) {
        write(Data((line + "\n").utf8))
    }

    public static func writeError(line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// Reads a small text file (a key), with an error that names the file.
public func readTextFile(_ path: String, what: String) throws(CLIError) -> String {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw .failure("cannot read \(what) file \(path)")
    }
    return String(decoding: data, as: UTF8.self)
}
