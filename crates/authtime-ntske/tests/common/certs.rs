//! Test certificates made with rcgen: a self-signed server certificate, or a CA and a
//! server certificate it signs. Also used by `examples/gen_test_certs.rs`.

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// PEM texts of one server identity.
pub struct ServerPem {
    /// Certificate chain, leaf first (for the server).
    pub chain: String,
    /// Private key (PKCS#8).
    pub key: String,
    /// What a client must trust: the CA, or the self-signed certificate itself.
    pub trust: String,
}

/// A self-signed certificate for `names` (DNS names or IP addresses).
pub fn self_signed(names: &[&str]) -> ServerPem {
    let key = KeyPair::generate().expect("key generation");
    let params = server_params(names);
    let cert = params.self_signed(&key).expect("self-signed certificate");
    ServerPem {
        chain: cert.pem(),
        key: key.serialize_pem(),
        trust: cert.pem(),
    }
}

/// A CA and a server certificate for `names` signed by it.
pub fn ca_signed(names: &[&str]) -> ServerPem {
    let ca_key = KeyPair::generate().expect("key generation");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "authtime test CA");
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let key = KeyPair::generate().expect("key generation");
    let cert = server_params(names)
        .signed_by(&key, &ca, &ca_key)
        .expect("server certificate");
    ServerPem {
        chain: format!("{}{}", cert.pem(), ca.pem()),
        key: key.serialize_pem(),
        trust: ca.pem(),
    }
}

fn server_params(names: &[&str]) -> CertificateParams {
    // rcgen turns strings that parse as IP addresses into IP SANs, the rest into DNS SANs.
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    params.distinguished_name.push(
        DnType::CommonName,
        names.first().copied().unwrap_or("authtime"),
    );
    params
}

impl ServerPem {
    /// Writes `chain.pem`, `key.pem` and `trust.pem` into `dir`.
    pub fn write_to(&self, dir: &Path) {
        std::fs::create_dir_all(dir).expect("create dir");
        std::fs::write(dir.join("chain.pem"), &self.chain).expect("write chain");
        std::fs::write(dir.join("key.pem"), &self.key).expect("write key");
        std::fs::write(dir.join("trust.pem"), &self.trust).expect("write trust");
    }
}
