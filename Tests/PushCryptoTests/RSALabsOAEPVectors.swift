import Testing

/// RSA-OAEP vectors published by RSA Laboratories with PKCS #1 v2.1 (`oaep-vect.txt` of
/// `pkcs-1v2-1d2-vec`, Example 10: a 2048-bit key, SHA-1, MGF1-SHA-1, empty label): each
/// message with the seed it was encrypted with and the ciphertext that must come out.
enum RSALabsOAEPExample10 {
    static let modulus = hex(
        "ae45ed5601cec6b8cc05f803935c674ddbe0d75c4c09fd7951fc6b0caec313a8",
        "df39970c518bffba5ed68f3f0d7f22a4029d413f1ae07e4ebe9e4177ce23e7f5",
        "404b569e4ee1bdcf3c1fb03ef113802d4f855eb9b5134b5a7c8085adcae6fa2f",
        "a1417ec3763be171b0c62b760ede23c12ad92b980884c641f5a8fac26bdad4a0",
        "3381a22fe1b754885094c82506d4019a535a286afeb271bb9ba592de18dcf600",
        "c2aeeae56e02f7cf79fc14cf3bdc7cd84febbbf950ca90304b2219a7aa063aef",
        "a2c3c1980e560cd64afe779585b6107657b957857efde6010988ab7de417fc88",
        "d8f384c4e6e72c3f943e0c31c0c4a5cc36f879d8a3ac9d7d59860eaada6b83bb")
    static let exponent = hex("010001")

    struct Encryption: CustomTestStringConvertible {
        let number: Int
        let message: [UInt8]
        let seed: [UInt8]
        let cipherText: [UInt8]
        var testDescription: String { "Example 10.\(number)" }
    }

    static let encryptions: [Encryption] = [
        Encryption(
            number: 1,
            message: hex("8bba6bf82a6c0f86d5f1756e97956870b08953b06b4eb205bc1694ee"),
            seed: hex("47e1ab7119fee56c95ee5eaad86f40d0aa63bd33"),
            cipherText: hex(
                "53ea5dc08cd260fb3b858567287fa91552c30b2febfba213f0ae87702d068d19",
                "bab07fe574523dfb42139d68c3c5afeee0bfe4cb7969cbf382b804d6e6139614",
                "4e2d0e60741f8993c3014b58b9b1957a8babcd23af854f4c356fb1662aa72bfc",
                "c7e586559dc4280d160c126785a723ebeebeff71f11594440aaef87d10793a87",
                "74a239d4a04c87fe1467b9daf85208ec6c7255794a96cc29142f9a8bd418e3c1",
                "fd67344b0cd0829df3b2bec60253196293c6b34d3f75d32f213dd45c6273d505",
                "adf4cced1057cb758fc26aeefa441255ed4e64c199ee075e7f16646182fdb464",
                "739b68ab5daff0e63e9552016824f054bf4d3c8c90a97bb6b6553284eb429fcc")),
        Encryption(
            number: 2,
            message: hex("e6ad181f053b58a904f2457510373e57"),
            seed: hex("6d17f5b4c1ffac351d195bf7b09d09f09a4079cf"),
            cipherText: hex(
                "a2b1a430a9d657e2fa1c2bb5ed43ffb25c05a308fe9093c01031795f58744001",
                "10828ae58fb9b581ce9dddd3e549ae04a0985459bde6c626594e7b05dc4278b2",
                "a1465c1368408823c85e96dc66c3a30983c639664fc4569a37fe21e5a195b577",
                "6eed2df8d8d361af686e750229bbd663f161868a50615e0c337bec0ca35fec0b",
                "b19c36eb2e0bbcc0582fa1d93aacdb061063f59f2ce1ee43605e5d89eca183d2",
                "acdfe9f81011022ad3b43a3dd417dac94b4e11ea81b192966e966b182082e719",
                "64607b4f8002f36299844a11f2ae0faeac2eae70f8f4f98088acdcd0ac556e9f",
                "ccc511521908fad26f04c64201450305778758b0538bf8b5bb144a828e629795")),
        Encryption(
            number: 3,
            message: hex("510a2cf60e866fa2340553c94ea39fbc256311e83e94454b4124"),
            seed: hex("385387514deccc7c740dd8cdf9daee49a1cbfd54"),
            cipherText: hex(
                "9886c3e6764a8b9a84e84148ebd8c3b1aa8050381a78f668714c16d9cfd2a6ed",
                "c56979c535d9dee3b44b85c18be8928992371711472216d95dda98d2ee8347c9",
                "b14dffdff84aa48d25ac06f7d7e65398ac967b1ce90925f67dce049b7f812db0",
                "742997a74d44fe81dbe0e7a3feaf2e5c40af888d550ddbbe3bc20657a29543f8",
                "fc2913b9bd1a61b2ab2256ec409bbd7dc0d17717ea25c43f42ed27df8738bf4a",
                "fc6766ff7aff0859555ee283920f4c8a63c4a7340cbafddc339ecdb4b0515002",
                "f96c932b5b79167af699c0ad3fccfdf0f44e85a70262bf2e18fe34b850589975",
                "e867ff969d48eabf212271546cdc05a69ecb526e52870c836f307bd798780ede")),
        Encryption(
            number: 4,
            message: hex("bcdd190da3b7d300df9a06e22caae2a75f10c91ff667b7c16bde8b53064a2649",
                         "a94045c9"),
            seed: hex("5caca6a0f764161a9684f85d92b6e0ef37ca8b65"),
            cipherText: hex(
                "6318e9fb5c0d05e5307e1683436e903293ac4642358aaa223d7163013aba87e2",
                "dfda8e60c6860e29a1e92686163ea0b9175f329ca3b131a1edd3a77759a8b97b",
                "ad6a4f8f4396f28cf6f39ca58112e48160d6e203daa5856f3aca5ffed577af49",
                "9408e3dfd233e3e604dbe34a9c4c9082de65527cac6331d29dc80e0508a0fa71",
                "22e7f329f6cca5cfa34d4d1da417805457e008bec549e478ff9e12a763c477d1",
                "5bbb78f5b69bd57830fc2c4ed686d79bc72a95d85f88134c6b0afe56a8ccfbc8",
                "55828bb339bd17909cf1d70de3335ae07039093e606d655365de6550b872cd6d",
                "e1d440ee031b61945f629ad8a353b0d40939e96a3c450d2a8d5eee9f678093c8")),
        Encryption(
            number: 5,
            message: hex("a7dd6c7dc24b46f9dd5f1e91ada4c3b3df947e877232a9"),
            seed: hex("95bca9e3859894b3dd869fa7ecd5bbc6401bf3e4"),
            cipherText: hex(
                "75290872ccfd4a4505660d651f56da6daa09ca1301d890632f6a992f3d565cee",
                "464afded40ed3b5be9356714ea5aa7655f4a1366c2f17c728f6f2c5a5d1f8e28",
                "429bc4e6f8f2cff8da8dc0e0a9808e45fd09ea2fa40cb2b6ce6ffff5c0e159d1",
                "1b68d90a85f7b84e103b09e682666480c657505c0929259468a314786d74eab1",
                "31573cf234bf57db7d9e66cc6748192e002dc0deea930585f0831fdcd9bc33d5",
                "1f79ed2ffc16bcf4d59812fcebcaa3f9069b0e445686d644c25ccf63b456ee5f",
                "a6ffe96f19cdf751fed9eaf35957754dbf4bfea5216aa1844dc507cb2d080e72",
                "2eba150308c2b5ff1193620f1766ecf4481bafb943bd292877f2136ca494aba0")),
        Encryption(
            number: 6,
            message: hex("eaf1a73a1b0c4609537de69cd9228bbcfb9a8ca8c6c3efaf056fe4a7f4634ed0",
                         "0b7c39ec6922d7b8ea2c04ebac"),
            seed: hex("9f47ddf42e97eea856a9bdbc714eb3ac22f6eb32"),
            cipherText: hex(
                "2d207a73432a8fb4c03051b3f73b28a61764098dfa34c47a20995f8115aa6816",
                "679b557e82dbee584908c6e69782d7deb34dbd65af063d57fca76a5fd069492f",
                "d6068d9984d209350565a62e5c77f23038c12cb10c6634709b547c46f6b4a709",
                "bd85ca122d74465ef97762c29763e06dbc7a9e738c78bfca0102dc5e79d65b97",
                "3f28240caab2e161a78b57d262457ed8195d53e3c7ae9da021883c6db7c24afd",
                "d2322eac972ad3c354c5fcef1e146c3a0290fb67adf007066e00428d2cec18ce",
                "58f9328698defef4b2eb5ec76918fde1c198cbb38b7afc67626a9aefec4322bf",
                "d90d2563481c9a221f78c8272c82d1b62ab914e1c69f6af6ef30ca5260db4a46")),
    ]

    /// The key as PKCS#1 DER: SEQUENCE { INTEGER modulus, INTEGER exponent }.
    static var publicKeyDER: [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            let value = bytes.first.map { $0 & 0x80 != 0 } == true ? [0] + bytes : bytes
            return [0x02] + length(value.count) + value
        }
        func length(_ count: Int) -> [UInt8] {
            count < 0x80 ? [UInt8(count)] : count < 0x100 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        }
        let body = integer(modulus) + integer(exponent)
        return [0x30] + length(body.count) + body
    }

    private static func hex(_ parts: String...) -> [UInt8] {
        let digits = Array(parts.joined().utf8)
        return stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) ?? 0
        }
    }
}
