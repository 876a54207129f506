/** Throw-away certificate authorities and certificates for tests of TLS, made with openssl. */
package dev.frdiag.testing.tls;
