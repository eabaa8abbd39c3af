import COpenSSL
import Foundation
import PushCrypto

extension CACertificates {
    /// The system's CA store as OpenSSL's default paths define it, the same store for every
    /// client of the process that has no CA file of its own:
    /// - the bundle file `SSL_CERT_FILE` names, else OpenSSL's (on Debian `/usr/lib/ssl/cert.pem`,
    ///   a link to `/etc/ssl/certs/ca-certificates.crt`), every certificate parsed now;
    /// - the hashed directories `SSL_CERT_DIR` names (a colon-separated list), else OpenSSL's
    ///   (`/usr/lib/ssl/certs`), searched when a verification needs an issuer the file lacks.
    ///
    /// On a system as distributions ship it, that is what `SSL_CTX_set_default_verify_paths`
    /// loaded for each HTTP/2 context; the AMQP connections used to read only the bundle file,
    /// found by a list of distributions' paths. The store is read again when the bundle file
    /// changes (its identity, as for a CA file). A system without the file but with a
    /// directory is served by the directory. Stricter than OpenSSL, which drops a bad file
    /// silently and leaves each handshake to fail: a bundle that is unreadable, damaged or
    /// holds no certificate, a missing `SSL_CERT_FILE` someone set, or neither file nor
    /// directory, is refused here. Also unlike OpenSSL: an empty variable means its default
    /// (OpenSSL: nothing), the variables are honoured in a setuid process (a worker is not
    /// one), and `SSL_CERT_DIR` names directories only (OpenSSL 3 also opens a file or URI it
    /// names, through its "store" look-up).
    ///
    /// `defaults` are OpenSSL's compiled-in paths; tests pass their own.
    public static func system(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        defaults: (file: String, directories: String) = (String(cString: X509_get_default_cert_file()), String(cString: X509_get_default_cert_dir()))
    ) throws(CAFileError) -> CACertificates {
        let named = nonEmpty(environment[String(cString: X509_get_default_cert_file_env())])
        let file = named ?? defaults.file
        let directories = nonEmpty(environment[String(cString: X509_get_default_cert_dir_env())]) ?? defaults.directories
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        defer { if descriptor >= 0 { close(descriptor) } }
        let identity: FileIdentity?
        if descriptor >= 0 {
            guard let known = FileIdentity(descriptor: descriptor) else {
                throw CAFileError(path: file, reason: String(cString: strerror(errno)))
            }
            identity = known
        } else {
            let code = errno
            let reason = String(cString: strerror(code))
            guard code == ENOENT, named == nil, directories.split(separator: ":").contains(where: { isDirectory(String($0)) }) else {
                throw CAFileError(path: file, reason: named == nil && code == ENOENT ? "\(reason), nor a certificate directory at \(directories)" : reason)
            }
            identity = nil
        }
        let origin = identity == nil
            ? "the system's CA directories \(directories) (no bundle at \(file): install ca-certificates, or name a CA file)"
            : "the system's CA store (\(file) and \(directories))"
        return try remembered(.system(file: file, directories: directories), identity: identity, origin: origin) { store throws(CAFileError) in
            if identity != nil { try add(try contents(of: descriptor, path: file), to: store, path: file) }
            guard X509_STORE_load_path(store, directories) == 1 else {
                throw CAFileError(path: directories, reason: OpenSSLErrorQueue.drain(or: "X509_STORE_load_path failed"))
            }
        }
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    private static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }
}
