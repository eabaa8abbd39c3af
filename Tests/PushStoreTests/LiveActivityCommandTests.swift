import Foundation
import PushStore
import PushTestSupport
import Testing

@Suite("pushd device: Live Activity tokens")
struct LiveActivityCommandTests {
    @Test("push-to-start and activity tokens register through the CLI, an unknown device is refused, end-activity deletes")
    func tokensFromCommandLine() async throws {
        try await TestDatabase.withScratchDatabase(migrated: true) { configuration in
            let environment = TestDatabase.childEnvironment(for: configuration)
            let app = "com.example.lacli"
            let deviceToken = TestKeys.apnsToken()
            func pushd(_ arguments: [String]) async throws -> ToolResult {
                try await runTool(BuildProducts.pushd, arguments, environment: environment)
            }
            let device = try await pushd([
                "device", "register", "--recipient", "cli-user", "--platform", "ios", "--app", app, "--token", deviceToken,
            ])
            #expect(device.status == 0, "\(device.errors)")

            let start = try await pushd([
                "device", "push-to-start", "--app", app, "--device-token", deviceToken, "--token", TestKeys.apnsToken(),
            ])
            #expect(start.status == 0, "\(start.errors)")
            #expect(start.output.contains("replaced=false created=true"))

            let update = try await pushd([
                "device", "activity-token", "--app", app, "--device-token", deviceToken, "--activity-id", "meeting-9",
                "--token", TestKeys.apnsToken(),
            ])
            #expect(update.status == 0, "\(update.errors)")
            #expect(update.output.contains("created=true"))

            let unknown = try await pushd([
                "device", "push-to-start", "--app", app, "--device-token", TestKeys.apnsToken(), "--token", TestKeys.apnsToken(),
            ])
            #expect(unknown.status == 1)
            #expect(unknown.errors.contains("register the device first"))

            let ended = try await pushd(["device", "end-activity", "--app", app, "--activity-id", "meeting-9"])
            #expect(ended.status == 0, "\(ended.errors)")
            #expect(ended.output.trimmingCharacters(in: .whitespacesAndNewlines) == "deleted=1")

            let usage = try await pushd(["device", "end-activity", "--app", app, "--activity-id", "m", "--device-id", "x"])
            #expect(usage.status == 64)
        }
    }
}
