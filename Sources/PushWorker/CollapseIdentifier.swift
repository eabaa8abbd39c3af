import PushCrypto

/// The collapse id (APNs `apns-collapse-id`) and notification tag (expo-notifications'
/// `tag` in FCM data) of a job. FCM's own `collapse_key` is set only when the job asks for
/// one (`delivery.collapse_id`): FCM keeps at most four per offline device.
///
/// Derived from the job id unless the producer gave one, so a job delivered twice (a
/// redelivery after a worker crash, a retry) replaces the notification on the phone instead
/// of showing it twice. APNs allows 64 bytes: longer job ids are hashed (SHA-256, 64 hex
/// characters), which is stable across workers.
enum CollapseIdentifier {
    static func forJob(id jobID: String, explicit: String?) -> String {
        if let explicit { return explicit }
        if jobID.utf8.count <= 64 { return jobID }
        return Digest.sha256Hex(jobID)
    }
}
