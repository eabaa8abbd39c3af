extension APNsClient {
    /// `sendCheckingEnvironment` without a task per push: `completion` is called exactly
    /// once with the verdict.
    ///
    /// The common case (the connection's first authenticated push long done, an answer that
    /// needs nothing more) is settled on the HTTP/2 loop thread where the answer arrives.
    /// Everything else takes the awaited path in a task adopted by `group`, so it is
    /// cancelled with it: the first request on a connection (sent alone, see
    /// `FirstSuccessGate`), a resend after a lost connection, an expired provider token, a
    /// `BadDeviceToken` to try in the other environment.
    public nonisolated(nonsending) func submit(
        _ notification: APNsNotification, group: RequestGroup, completion: @escaping @Sendable (EnvironmentCheckedOutcome) -> Void
    ) async {
        if let problem = notification.localProblem {
            completion(EnvironmentCheckedOutcome(outcome: problem, correctedEnvironment: nil))
            return
        }
        guard firstRequest.isOpen, let bearer = try? tokens.bearer() else {
            // Not yet proven, or no token could be signed: the awaited path says why.
            group.adopt(Task { completion(await self.sendCheckingEnvironment(notification)) })
            return
        }
        let url = url(for: notification)
        await http.submit(request(notification, url: url, bearer: bearer), group: group) { [self] result in
            let first = Attempt(result, classify: { APNsResponseClassifier.classify($0) })
            if Self.isSettled(first), !Self.needsEnvironmentCheck(first.outcome) {
                completion(EnvironmentCheckedOutcome(outcome: first.outcome, correctedEnvironment: nil))
                return
            }
            group.adopt(Task {
                let settled = await self.settle(first, of: notification, url: url, bearer: bearer)
                completion(await self.checkEnvironment(after: settled, of: notification))
            })
        }
    }
}
