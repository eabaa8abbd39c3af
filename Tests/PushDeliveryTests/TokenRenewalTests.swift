import Foundation
import PushCrypto
@testable import PushDelivery
import PushTestSupport
import Synchronization
import Testing

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let current: Mutex<Date>
    init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(minutes: Double) { current.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
    func advance(seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

enum TestCredentials {
    /// A fresh P-256 key in PKCS#8 PEM, as Apple's `.p8` files are.
    static func p8() throws -> String {
        try TestKeyMaterial.p256PrivateKeyPEM()
    }
}

@Suite("APNs provider token renewal rules")
struct TokenRenewalTests {
    func decodeClaims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("the token is reused, renewed after 50 minutes, and carries iss/iat, kid and a 64-byte signature")
    func renewal() throws {
        let clock = ManualClock()
        let provider = try APNsTokenProvider(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: try TestCredentials.p8(), now: { clock.now })
        let first = try provider.token()
        let claims = try decodeClaims(first)
        #expect(claims["iss"] as? String == "TEAM123456")
        #expect((claims["iat"] as? NSNumber)?.int64Value == Int64(clock.now.timeIntervalSince1970))
        #expect(claims["exp"] == nil)
        var signature = String(first.split(separator: ".")[2]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while signature.count % 4 != 0 { signature += "=" }
        #expect(Data(base64Encoded: signature)?.count == 64)
        clock.advance(minutes: 49)
        #expect(try provider.token() == first)
        clock.advance(minutes: 1.5)
        let second = try provider.token()
        #expect(second != first)
        #expect(try provider.token() == second)
    }

    @Test("ExpiredProviderToken renews, but never sooner than 20 minutes after the last token")
    func renewOnExpiredRespectsMinimum() throws {
        let clock = ManualClock()
        let provider = try APNsTokenProvider(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: try TestCredentials.p8(), now: { clock.now })
        let first = try provider.token()
        clock.advance(minutes: 5)
        #expect(try provider.renew(rejected: first) == first, "5 minutes is too soon to rotate")
        clock.advance(minutes: 16)
        let renewed = try provider.renew(rejected: first)
        #expect(renewed != first)
        #expect(try provider.renew(rejected: first) == renewed, "a stale rejection does not rotate again")
    }

    @Test("an ES256 signer refuses an RSA key, an RS256 signer refuses an EC key")
    func signerKeyTypes() throws {
        let rsa = try DevicePrivateKey.generate().pkcs8PEM
        #expect(throws: JWSSignerError.self) { try JWSSigner(algorithm: .es256, privateKeyPEM: rsa) }
        #expect(throws: JWSSignerError.self) { try JWSSigner(algorithm: .rs256, privateKeyPEM: try TestCredentials.p8()) }
        #expect(throws: JWSSignerError.self) { try JWSSigner(algorithm: .es256, privateKeyPEM: "not a key") }
    }
}
