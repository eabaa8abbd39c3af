import PushModel

/// Public key texts the caller holds already, found by the SHA-256 of their UTF-8 (what
/// `DevicePublicKey.checkDigest` computes): a worker's `PublicKeyCache`.
///
/// A device lookup given them selects each key's digest instead of its text, takes the
/// text from here when the caller has it, and fetches the others in a second round trip.
/// A key's text was two thirds of each device row, sent again on every job although a
/// worker's cache holds almost every key after its first jobs: more data than PostgreSQL's
/// 8 KiB sends carry, so several wake-ups of the connection's thread for each lookup.
public struct KnownPublicKeys: Sendable {
    let text: @Sendable (UnsafeRawBufferPointer) -> String?

    /// - Parameter text: the text whose SHA-256 is the 32 bytes given, if the caller holds it.
    public init(_ text: @escaping @Sendable (_ digest: UnsafeRawBufferPointer) -> String?) {
        self.text = text
    }
}

extension DeviceRegistry {
    /// The devices of a lookup made with `Device.columnsWithKeyDigest` (and `extraColumns`
    /// after it): a key the caller knows comes with its text, and the others are fetched by
    /// id in one more statement. A device whose row is gone by then is left out; one whose
    /// key changed in between comes with its row as it is now.
    func devices(
        keyedByDigest result: QueryResult, knownKeys: KnownPublicKeys, extraColumns: Int, in app: AppIdentifiers?,
        _ each: (SQLRow, Device) throws(StoreError) -> Void = { _, _ in }
    ) async throws(StoreError) -> [Device] {
        let digestColumn = Device.columnCount
        var missing: [Int64] = []
        var devices: [Device] = []
        devices.reserveCapacity(result.count)
        for row in result {
            var needsText = false
            let text = try row.withBytes(column: digestColumn) { digest -> String? in
                guard let digest else { return nil }
                if let text = knownKeys.text(digest) { return text }
                needsText = true
                return nil
            }
            let device = try Device(
                row: row, extraColumns: extraColumns + 1, publicKey: text, fromCallersCache: text != nil, previous: devices.last, app: app)
            try each(row, device)
            if needsText { missing.append(device.id) }
            devices.append(device)
        }
        guard !missing.isEmpty else { return devices }
        let fetched = try await self.devices(ids: missing, in: app)
        var byID: [Int64: Device] = [:]
        byID.reserveCapacity(fetched.count)
        for device in fetched { byID[device.id] = device }
        let needed = Set(missing)
        return devices.compactMap { device in needed.contains(device.id) ? byID[device.id] : device }
    }
}
