import PushModel

extension Device {
    /// The device as a job's results keep it once sent: the planner and the events need its
    /// id, token and registration, never its public key (the largest field), so a job's
    /// results do not hold every key of its fan-out.
    var withoutPublicKey: Device {
        guard publicKey != nil else { return self }
        return Device(
            id: id, recipientID: recipientID, platform: platform, appID: appID, environment: environment, token: token,
            publicKey: nil, keyID: keyID, keyRegisteredAt: keyRegisteredAt, tokenRegisteredAt: tokenRegisteredAt,
            appVersion: appVersion)
    }
}
