import Foundation

/// A Google service account key file (the JSON downloaded from the Firebase console).
public struct FCMServiceAccount: Sendable, Decodable {
    public let projectID: String
    public let clientEmail: String
    public let privateKeyID: String?
    /// PEM RSA private key. Never logged.
    public let privateKey: String
    public let tokenURI: String

    enum CodingKeys: String, CodingKey {
        case type
        case projectID = "project_id"
        case clientEmail = "client_email"
        case privateKeyID = "private_key_id"
        case privateKey = "private_key"
        case tokenURI = "token_uri"
    }

    public init(projectID: String, clientEmail: String, privateKeyID: String?, privateKey: String, tokenURI: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.tokenURI = tokenURI
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decodeIfPresent(String.self, forKey: .type)
        guard type == nil || type == "service_account" else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "type is \"\(type ?? "")\", expected \"service_account\"")
        }
        projectID = try container.decode(String.self, forKey: .projectID)
        clientEmail = try container.decode(String.self, forKey: .clientEmail)
        privateKeyID = try container.decodeIfPresent(String.self, forKey: .privateKeyID)
        privateKey = try container.decode(String.self, forKey: .privateKey)
        tokenURI = try container.decodeIfPresent(String.self, forKey: .tokenURI) ?? "https://oauth2.googleapis.com/token"
    }

    /// Reads a key file, with an error naming the file and the problem (never the key).
    public static func load(path: String) throws(DeliveryConfigurationError) -> FCMServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidCredentials("cannot read FCM service account file \(path)")
        }
        do {
            return try JSONDecoder().decode(FCMServiceAccount.self, from: data)
        } catch {
            throw .invalidCredentials("FCM service account file \(path) is not a service account key: \(error)")
        }
    }
}
