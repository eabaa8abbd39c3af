/// The plaintext sealed for each device: what the phone's notification service extension
/// (iOS) or messaging service (Android) decrypts and merges over the fallback.
///
///     {"title":…,"message":…,"body":{…data, "sender":{id,displayName,avatarUrl}},
///      "experienceId":…,"scopeKey":…}
///
/// The same bytes go to every device of a job (each sealed with its own key), so this is
/// built once per job.
public enum SealedContent {
    /// nil when the job has no private content: devices then get the fallback only.
    public static func plaintext(for job: NotificationJob) -> [UInt8]? {
        guard let content = job.content else { return nil }
        var body = content.data
        if let sender = content.sender {
            var fields: [String: JSONValue] = ["id": .string(sender.id), "displayName": .string(sender.displayName)]
            if let avatar = sender.avatarURL { fields["avatarUrl"] = .string(avatar) }
            body["sender"] = .object(fields)
        }
        var object: [String: JSONValue] = [
            "title": .string(content.title),
            "message": .string(content.message),
            "body": .object(body),
        ]
        if let experience = job.app.experienceID { object["experienceId"] = .string(experience) }
        if let scope = job.app.scopeKey { object["scopeKey"] = .string(scope) }
        return Array(JSONValue.object(object).jsonText.utf8)
    }
}
