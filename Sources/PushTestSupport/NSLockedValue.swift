import Foundation
import Synchronization

/// A value behind a `Mutex`, for handing results between threads in test tooling.
public final class NSLockedValue<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    public func set(_ value: Value) {
        mutex.withLock { $0 = value }
    }

    public func get() -> Value {
        mutex.withLock { $0 }
    }

    public func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}
