import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Cipher;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The Android client's envelope code path, with its exact JCA transformations:
 * RSA/ECB/OAEPWithSHA-1AndMGF1Padding for the key and AES/GCM/NoPadding (128-bit tag,
 * appended to the ciphertext by the JCA) for the content.
 *
 *   java AndroidEnvelope decrypt PRIVATE_KEY_PKCS8_PEM   (envelope JSON on stdin)
 *   java AndroidEnvelope encrypt SPKI_BASE64_FILE        (plaintext on stdin)
 */
public final class AndroidEnvelope {
    public static void main(String[] args) throws Exception {
        byte[] input = System.in.readAllBytes();
        String keyText = new String(Files.readAllBytes(Paths.get(args[1])), StandardCharsets.US_ASCII);
        if (args[0].equals("decrypt")) {
            System.out.write(decrypt(new String(input, StandardCharsets.UTF_8), keyText));
        } else {
            System.out.write(encrypt(input, keyText).getBytes(StandardCharsets.UTF_8));
        }
        System.out.flush();
    }

    static byte[] decrypt(String json, String pem) throws Exception {
        String body = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        PrivateKey privateKey = KeyFactory.getInstance("RSA")
            .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
        Cipher rsa = Cipher.getInstance("RSA/ECB/OAEPWithSHA-1AndMGF1Padding");
        rsa.init(Cipher.DECRYPT_MODE, privateKey);
        byte[] aesKey = rsa.doFinal(field(json, "encrypted_key"));
        byte[] cipherText = field(json, "cipher_text");
        byte[] tag = field(json, "tag");
        byte[] sealed = Arrays.copyOf(cipherText, cipherText.length + tag.length);
        System.arraycopy(tag, 0, sealed, cipherText.length, tag.length);
        Cipher aes = Cipher.getInstance("AES/GCM/NoPadding");
        aes.init(Cipher.DECRYPT_MODE, new SecretKeySpec(aesKey, "AES"), new GCMParameterSpec(128, field(json, "nonce")));
        return aes.doFinal(sealed);
    }

    static String encrypt(byte[] plaintext, String spkiBase64) throws Exception {
        PublicKey publicKey = KeyFactory.getInstance("RSA")
            .generatePublic(new X509EncodedKeySpec(Base64.getDecoder().decode(spkiBase64.trim())));
        KeyGenerator generator = KeyGenerator.getInstance("AES");
        generator.init(256);
        SecretKey aesKey = generator.generateKey();
        byte[] nonce = new byte[12];
        new SecureRandom().nextBytes(nonce);
        Cipher aes = Cipher.getInstance("AES/GCM/NoPadding");
        aes.init(Cipher.ENCRYPT_MODE, aesKey, new GCMParameterSpec(128, nonce));
        byte[] sealed = aes.doFinal(plaintext);
        byte[] cipherText = Arrays.copyOf(sealed, sealed.length - 16);
        byte[] tag = Arrays.copyOfRange(sealed, sealed.length - 16, sealed.length);
        Cipher rsa = Cipher.getInstance("RSA/ECB/OAEPWithSHA-1AndMGF1Padding");
        rsa.init(Cipher.ENCRYPT_MODE, publicKey);
        byte[] wrapped = rsa.doFinal(aesKey.getEncoded());
        Base64.Encoder b64 = Base64.getEncoder();
        return "{\"encrypted_key\":\"" + b64.encodeToString(wrapped) + "\",\"cipher_text\":\"" + b64.encodeToString(cipherText)
            + "\",\"nonce\":\"" + b64.encodeToString(nonce) + "\",\"tag\":\"" + b64.encodeToString(tag) + "\"}";
    }

    /** Our envelopes are flat objects of base64 strings, so a pattern is enough here. */
    static byte[] field(String json, String name) {
        Matcher matcher = Pattern.compile("\"" + name + "\"\\s*:\\s*\"([A-Za-z0-9+/=]*)\"").matcher(json);
        if (!matcher.find()) throw new IllegalArgumentException("missing " + name);
        return Base64.getDecoder().decode(matcher.group(1));
    }
}
