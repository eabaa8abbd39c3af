import Foundation
import PushDelivery

extension WorkerConfiguration {
    /// What `pushd channel` needs: the APNs credentials (file, then `PUSHD_APNS_*`), the CA
    /// file, and the channel-management URL override (`apns_channels_url` /
    /// `PUSHD_APNS_CHANNELS_URL`, e.g. the emulator's `channels_url`). Nothing else is required.
    public static func loadChannelManagement(
        file: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(Problems) -> (apns: [APNsCredentials], caFile: String?, channelsURL: String?) {
        var reader = ConfigurationReader(environment: environment)
        if let path = file ?? environment["PUSHD_CONFIG"] { reader.loadFile(path) }
        let caFile = reader.string("ca_file", env: "PUSHD_CA_FILE")
        let channelsURL = reader.string("apns_channels_url", env: "PUSHD_APNS_CHANNELS_URL")
        let apns = reader.apnsCredentials()
        if apns.isEmpty { reader.problem("no APNs credentials: add \"apns\" entries to the config file or set PUSHD_APNS_*") }
        guard reader.problems.isEmpty else { throw Problems(problems: reader.problems) }
        return (apns, caFile, channelsURL)
    }
}
