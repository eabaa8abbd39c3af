@testable import PushDelivery
import Testing

@Suite("BadDeviceToken: the other environment before pruning")
struct EnvironmentCheckTests {
    static let bad = DeliveryOutcome.invalidToken(reason: "BadDeviceToken", invalidSince: nil)

    @Test("accepted in the other environment: delivered, environment corrected")
    func acceptedElsewhere() {
        let verdict = APNsClient.decide(first: Self.bad, elsewhere: .delivered(id: "x"), otherEnvironment: .sandbox)
        #expect(verdict == .init(outcome: .delivered(id: "x"), correctedEnvironment: .sandbox))
    }

    @Test("refused there too: the token is dead")
    func refusedElsewhere() {
        let verdict = APNsClient.decide(first: Self.bad, elsewhere: Self.bad, otherEnvironment: .production)
        #expect(verdict == .init(outcome: Self.bad, correctedEnvironment: nil))
    }

    @Test("any other answer elsewhere: retried later, never pruned on doubt")
    func doubt() {
        for elsewhere in [DeliveryOutcome.retryLater(reason: "ServiceUnavailable", retryAfter: nil),
                          .configurationError(reason: "InvalidProviderToken", status: 403), .rejected(reason: "BadPath", status: 404)] {
            let verdict = APNsClient.decide(first: Self.bad, elsewhere: elsewhere, otherEnvironment: .sandbox)
            #expect(verdict.outcome.label == "retry" && verdict.correctedEnvironment == nil)
        }
    }

    @Test("a URL per environment wins over the shared one, which wins over Apple's")
    func urls() {
        var configuration = APNsClient.Configuration(teamID: "T", keyID: "K", privateKeyPEM: "", baseURLOverride: "https://both")
        #expect(configuration.baseURL(for: .sandbox) == "https://both")
        configuration = configuration.withEnvironmentURLs(production: nil, sandbox: "https://sandbox")
        #expect(configuration.baseURL(for: .sandbox) == "https://sandbox")
        #expect(configuration.baseURL(for: .production) == "https://both")
        #expect(APNsClient.Configuration(teamID: "T", keyID: "K", privateKeyPEM: "").baseURL(for: .production) == "https://api.push.apple.com")
    }
}
