// Package certs makes throw-away TLS material for tests at test time: a CA,
// a server certificate for the loopback addresses and a client certificate,
// as PEM files, inline PEM strings and PKCS12 stores, the forms Kafka's
// ssl.keystore.* and ssl.truststore.* keys take. No key material is ever
// committed; every test run makes its own.
//
// Only tests import it.
//
//arch:imports std software.sslmate.com/src/go-pkcs12
package certs
