/// Who is waiting for a publisher confirm.
enum ConfirmWaiter {
    case single(CheckedContinuation<Result<Void, QueueError>, Never>)
    case batch(BatchConfirmation, index: Int)

    func resume(with result: Result<Void, QueueError>) {
        switch self {
        case .single(let continuation): continuation.resume(returning: result)
        case .batch(let batch, let index): batch.resolve(index, result)
        }
    }
}

/// Collects the confirms of one batch publish and resumes its caller once all are in.
/// Confined to the connection thread (created, filled and resumed there), hence no locking.
final class BatchConfirmation {
    private var results: [Result<Void, QueueError>?]
    private(set) var remaining: Int
    private var continuation: CheckedContinuation<[Result<Void, QueueError>], Never>?

    init(count: Int, continuation: CheckedContinuation<[Result<Void, QueueError>], Never>) {
        results = Array(repeating: nil, count: count)
        remaining = count
        self.continuation = continuation
    }

    var collected: [Result<Void, QueueError>] {
        results.map { $0 ?? .failure(.confirmationUnknown(reason: "no outcome recorded")) }
    }

    func resolve(_ index: Int, _ result: Result<Void, QueueError>) {
        guard results[index] == nil else { return }
        results[index] = result
        remaining -= 1
        if remaining == 0, let continuation {
            self.continuation = nil
            continuation.resume(returning: collected)
        }
    }
}
