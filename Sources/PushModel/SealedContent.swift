/// The plaintext sealed for each device: what the phone's notification service extension
/// (iOS) or messaging service (Android) decrypts and merges over the fallback.
///
///     {"title":…,"message":…,"body":{…data, "sender":{id,displayName,avatarUrl}},
///      "experienceId":…,"scopeKey":…}
///
/// The same bytes go to every device of a job (each sealed with its own key), so this is
/// built once per job.
public enum SealedContent {
    public static func plaintext(for job: NotificationJob) -> [UInt8] {
        var body = job.content.data
        if let sender = job.content.sender {
            var fields: [String: JSONValue] = ["id": .string(sender.id), "displayName": .string(sender.displayName)]
            if let avatar = sender.avatarURL { fields["avatarUrl"] = .string(avatar) }
            body["sender"] = .object(fields)
        }
        var object: [String: JSONValue] = [
            "title": .string(job.content.title),
            "message": .string(job.content.message),
            "body": .object(body),
        ]
        if let experience = job.app.experienceID { object["experienceId"] = .string(experience) }
        if let scope = job.app.scopeKey { object["scopeKey"] = .string(scope) }
        return Array(JSONValue.object(object).jsonText.utf8)
    }
}
