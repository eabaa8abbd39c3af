import PushClient
import Testing

@Suite("Live Activity names from untrusted props")
struct LiveActivityNamesTests {
    @Test("a plain meeting id names the avatar file and the staging key as the app does")
    func plainIDs() {
        #expect(LiveActivityNames.avatarFileName("meeting-42_a.b") == "la-avatar-meeting-42_a.b")
        #expect(LiveActivityNames.stagingKey("meeting-42") == "__tt_la_enrichment_meeting-42")
    }

    @Test("an id that is not a plain file name never names a file", arguments: [
        "../../etc/passwd", "a/b", ".hidden", "", "tab\there", "é", String(repeating: "x", count: 201),
    ])
    func unsafeIDs(id: String) {
        #expect(LiveActivityNames.avatarFileName(id) == nil)
    }
}
