extension APNsClient.Configuration {
    /// This configuration with a host per environment.
    public func withEnvironmentURLs(production: String?, sandbox: String?) -> Self {
        var copy = self
        copy.productionBaseURL = production
        copy.sandboxBaseURL = sandbox
        return copy
    }

    /// The host for `environment`: its own override, else the shared one, else Apple's.
    public func baseURL(for environment: APNsEnvironment) -> String {
        switch environment {
        case .production: productionBaseURL ?? baseURLOverride ?? environment.baseURL
        case .sandbox: sandboxBaseURL ?? baseURLOverride ?? environment.baseURL
        }
    }
}

extension APNsEnvironment {
    public var other: APNsEnvironment { self == .production ? .sandbox : .production }
}

extension APNsClient {
    /// What became of a push, and the environment the token turned out to belong to when
    /// that is not the one it was registered under.
    public struct EnvironmentCheckedOutcome: Sendable, Equatable {
        public let outcome: DeliveryOutcome
        /// Set when the token was refused in its registered environment and accepted in
        /// this one: the device's environment should be corrected.
        public let correctedEnvironment: APNsEnvironment?
    }

    /// `send`, ruling out the wrong environment before a token is declared dead.
    ///
    /// APNs answers `BadDeviceToken` both for a dead token and for a live one sent to the
    /// other environment (a development build registered as production, or one misconfigured
    /// URL): pruning on the first answer deletes devices en masse. So the push is tried once
    /// in the other environment: accepted there, the device's environment is corrected;
    /// refused there too, the token is dead; any other answer (the other host down, a 5xx,
    /// its configuration broken) retries later rather than prune on doubt.
    public nonisolated(nonsending) func sendCheckingEnvironment(_ notification: APNsNotification) async -> EnvironmentCheckedOutcome {
        await checkEnvironment(after: await send(notification), of: notification)
    }

    /// True when the outcome in the registered environment needs the other one tried.
    static func needsEnvironmentCheck(_ first: DeliveryOutcome) -> Bool {
        if case .invalidToken(let reason, nil) = first, APNsReason(reason) == .badDeviceToken { return true }
        return false
    }

    /// The verdict on `first`, the outcome in the registered environment: itself, or what
    /// trying the other environment makes of it.
    nonisolated(nonsending) func checkEnvironment(after first: DeliveryOutcome, of notification: APNsNotification) async -> EnvironmentCheckedOutcome {
        guard Self.needsEnvironmentCheck(first) else {
            return EnvironmentCheckedOutcome(outcome: first, correctedEnvironment: nil)
        }
        var elsewhere = notification
        elsewhere.environment = notification.environment.other
        return Self.decide(first: first, elsewhere: await send(elsewhere), otherEnvironment: elsewhere.environment)
    }

    /// The verdict from both answers (pure, unit-tested).
    static func decide(first: DeliveryOutcome, elsewhere: DeliveryOutcome, otherEnvironment: APNsEnvironment) -> EnvironmentCheckedOutcome {
        switch elsewhere {
        case .delivered:
            return EnvironmentCheckedOutcome(outcome: elsewhere, correctedEnvironment: otherEnvironment)
        case .invalidToken:
            // Refused there too (BadDeviceToken, or dead there as well): the token is dead.
            return EnvironmentCheckedOutcome(outcome: first, correctedEnvironment: nil)
        case .retryLater(let otherReason, let retryAfter):
            return EnvironmentCheckedOutcome(
                outcome: .retryLater(reason: "\(first.reason); the other environment answered \(otherReason)", retryAfter: retryAfter),
                correctedEnvironment: nil)
        case .rejected(let otherReason, _), .configurationError(let otherReason, _):
            return EnvironmentCheckedOutcome(
                outcome: .retryLater(reason: "\(first.reason); the other environment answered \(otherReason)", retryAfter: nil),
                correctedEnvironment: nil)
        }
    }
}
