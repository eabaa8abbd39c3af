import CCurl
import CCurlShims
import COpenSSL
import CPostgreSQL
import CRabbitMQ
import CRabbitMQShims
import Testing

/// Each C boundary builds, links and answers: the four Debian libraries the cluster
/// stands on, called through the module maps and shims.
@Suite("C boundaries link and load")
struct CLibrariesLinkTests {
    @Test("OpenSSL 3")
    func openSSL() {
        #expect(OpenSSL_version_num() >= 0x3000_0000)
    }

    @Test("libpq")
    func libpq() {
        #expect(PQlibVersion() >= 120_000)
        #expect(PQisthreadsafe() == 1)
    }

    @Test("rabbitmq-c 0.11 or later")
    func rabbitMQ() {
        #expect(amqp_version_number() >= 0x000B_0000)
        let connection = amqp_new_connection()
        #expect(connection != nil)
        amqp_destroy_connection(connection)
    }

    @Test("libcurl with HTTP/2 (nghttp2) and TLS, options set through the shim")
    func curl() throws {
        let info = try #require(pushd_curl_version_info())
        #expect(info.pointee.features & CURL_VERSION_HTTP2 != 0)
        #expect(info.pointee.features & CURL_VERSION_SSL != 0)
        let handle = try #require(curl_easy_init())
        defer { curl_easy_cleanup(handle) }
        #expect(pushd_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)) == CURLE_OK)
    }
}
