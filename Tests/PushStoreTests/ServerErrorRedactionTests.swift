@testable import PushStore
import Testing

@Suite("PostgreSQL errors in logs")
struct ServerErrorRedactionTests {
    @Test("a server error's description never carries its detail (rows, tokens, keys), only the constraint")
    func detailLeftOut() {
        let error = ServerError(
            sqlState: "23514", message: "new row for relation \"devices\" violates check constraint \"devices_environment_check\"",
            detail: "Failing row contains (7, user-1, ios, com.acme, staging, c0de1234secrettoken, MIIBIjANBgkq…).",
            constraint: "devices_environment_check", table: "devices")
        let text = StoreError.server(error).description
        #expect(!text.contains("c0de1234secrettoken") && !text.contains("MIIBIjANBgkq") && !text.contains("Failing row"))
        #expect(text.contains("23514") && text.contains("devices_environment_check"))
    }
}
