//! The Jupyter wire protocol: the connection file, messages as frames, and
//! HMAC-SHA256 signing and checking.
//!
//! A message on a ROUTER socket is `identities..., "<IDS|MSG>", signature,
//! header, parent_header, metadata, content, buffers...`. The signature covers
//! the four JSON frames exactly as they were received, so they are kept as
//! bytes until checked; JSON values (`serde_json::Value`) keep unknown fields.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

pub const DELIMITER: &[u8] = b"<IDS|MSG>";
/// The messaging protocol version this kernel speaks.
pub const PROTOCOL_VERSION: &str = "5.3";

/// What the connection file says: where to bind and how to sign.
#[derive(Debug, Clone)]
pub struct Connection {
    pub transport: String,
    pub ip: String,
    pub shell_port: u16,
    pub iopub_port: u16,
    pub stdin_port: u16,
    pub control_port: u16,
    pub hb_port: u16,
    pub key: String,
    pub signature_scheme: String,
}

impl Connection {
    pub fn parse(text: &str) -> Result<Connection, String> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| format!("not a JSON connection file: {e}"))?;
        let port = |name: &str| -> Result<u16, String> {
            v.get(name)
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("the connection file has no valid '{name}'"))
        };
        let string = |name: &str, default: &str| -> String {
            v.get(name)
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_string()
        };
        let c = Connection {
            transport: string("transport", "tcp"),
            ip: string("ip", "127.0.0.1"),
            shell_port: port("shell_port")?,
            iopub_port: port("iopub_port")?,
            stdin_port: port("stdin_port")?,
            control_port: port("control_port")?,
            hb_port: port("hb_port")?,
            key: string("key", ""),
            signature_scheme: string("signature_scheme", "hmac-sha256"),
        };
        if c.transport != "tcp" {
            return Err(format!(
                "transport '{}' is not supported (only tcp)",
                c.transport
            ));
        }
        if !c.key.is_empty() && c.signature_scheme != "hmac-sha256" {
            return Err(format!(
                "signature scheme '{}' is not supported (only hmac-sha256)",
                c.signature_scheme
            ));
        }
        Ok(c)
    }

    pub fn endpoint(&self, port: u16) -> String {
        format!("{}://{}:{}", self.transport, self.ip, port)
    }
}

/// Signs outgoing and checks incoming messages; an empty key means unsigned.
#[derive(Clone)]
pub struct Signer {
    mac: Option<Hmac<Sha256>>,
}

impl Signer {
    pub fn new(key: &str) -> Signer {
        let mac = (!key.is_empty())
            .then(|| Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes any key"));
        Signer { mac }
    }

    fn mac_of(&self, parts: &[&[u8]]) -> Option<Hmac<Sha256>> {
        let mut mac = self.mac.clone()?;
        for p in parts {
            mac.update(p);
        }
        Some(mac)
    }

    /// The lower-case hex signature of the four JSON frames ("" when unsigned).
    pub fn sign(&self, parts: &[&[u8]]) -> String {
        match self.mac_of(parts) {
            Some(mac) => hex::encode(mac.finalize().into_bytes()),
            None => String::new(),
        }
    }

    /// Whether `signature` is right for the frames, compared in constant time.
    pub fn verify(&self, signature: &[u8], parts: &[&[u8]]) -> bool {
        match self.mac_of(parts) {
            None => true,
            Some(mac) => match hex::decode(signature) {
                Ok(bytes) => mac.verify_slice(&bytes).is_ok(),
                Err(_) => false,
            },
        }
    }
}

/// One protocol message, with the ROUTER identities it came from (replies go back to them).
#[derive(Debug, Clone)]
pub struct Message {
    pub identities: Vec<Vec<u8>>,
    pub header: Value,
    pub parent_header: Value,
    pub metadata: Value,
    pub content: Value,
    pub buffers: Vec<Vec<u8>>,
}

impl Message {
    /// Decode received frames, checking the signature. The error says why the
    /// message was dropped (for the log).
    pub fn decode(frames: &[&[u8]], signer: &Signer) -> Result<Message, String> {
        let delim = frames
            .iter()
            .position(|f| *f == DELIMITER)
            .ok_or("no <IDS|MSG> delimiter")?;
        let rest = &frames[delim + 1..];
        if rest.len() < 5 {
            return Err(format!(
                "{} frames after the delimiter, expected at least 5",
                rest.len()
            ));
        }
        if !signer.verify(rest[0], &rest[1..5]) {
            return Err("bad signature".into());
        }
        let json = |i: usize, what: &str| -> Result<Value, String> {
            serde_json::from_slice(rest[i]).map_err(|e| format!("{what} is not JSON: {e}"))
        };
        let header = json(1, "header")?;
        if !header.is_object() || header.get("msg_type").and_then(Value::as_str).is_none() {
            return Err("header without msg_type".into());
        }
        Ok(Message {
            identities: frames[..delim].iter().map(|f| f.to_vec()).collect(),
            header,
            parent_header: json(2, "parent_header")?,
            metadata: json(3, "metadata")?,
            content: json(4, "content")?,
            buffers: rest[5..].iter().map(|f| f.to_vec()).collect(),
        })
    }

    /// The frames to send, signed.
    pub fn encode(&self, signer: &Signer) -> Vec<Vec<u8>> {
        let header = self.header.to_string().into_bytes();
        let parent = self.parent_header.to_string().into_bytes();
        let metadata = self.metadata.to_string().into_bytes();
        let content = self.content.to_string().into_bytes();
        let signature = signer.sign(&[&header, &parent, &metadata, &content]);
        let mut frames = self.identities.clone();
        frames.push(DELIMITER.to_vec());
        frames.push(signature.into_bytes());
        frames.extend([header, parent, metadata, content]);
        frames.extend(self.buffers.iter().cloned());
        frames
    }

    pub fn msg_type(&self) -> &str {
        self.header
            .get("msg_type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// Makes headers for one kernel process (one `session` id for all of them).
#[derive(Clone)]
pub struct Headers {
    pub session: String,
}

impl Headers {
    pub fn new() -> Headers {
        Headers {
            session: uuid::Uuid::new_v4().to_string(),
        }
    }

    pub fn header(&self, msg_type: &str) -> Value {
        json!({
            "msg_id": uuid::Uuid::new_v4().to_string(),
            "session": self.session,
            "username": "arr",
            "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "msg_type": msg_type,
            "version": PROTOCOL_VERSION,
        })
    }

    /// A message caused by `parent` (its header becomes our parent_header),
    /// addressed to the same peer.
    pub fn reply(&self, parent: &Message, msg_type: &str, content: Value) -> Message {
        Message {
            identities: parent.identities.clone(),
            header: self.header(msg_type),
            parent_header: parent.header.clone(),
            metadata: json!({}),
            content,
            buffers: Vec::new(),
        }
    }

    /// A broadcast on iopub caused by the request whose header is `parent`
    /// (`{}` for none); the topic frame names the message type.
    pub fn publish(&self, parent: &Value, msg_type: &str, content: Value) -> Message {
        Message {
            identities: vec![format!("kernel.{}.{msg_type}", self.session).into_bytes()],
            header: self.header(msg_type),
            parent_header: parent.clone(),
            metadata: json!({}),
            content,
            buffers: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(m: &Message, s: &Signer) -> Vec<Vec<u8>> {
        m.encode(s)
    }

    #[test]
    fn round_trip_and_bad_signatures() {
        let signer = Signer::new("secret");
        let h = Headers::new();
        let mut m = h.publish(&json!({}), "status", json!({"execution_state": "idle"}));
        m.identities = vec![b"peer".to_vec()];
        let f = frames(&m, &signer);
        let refs: Vec<&[u8]> = f.iter().map(|v| v.as_slice()).collect();
        let back = Message::decode(&refs, &signer).unwrap();
        assert_eq!(back.msg_type(), "status");
        assert_eq!(back.identities, vec![b"peer".to_vec()]);
        assert_eq!(back.content, m.content);

        let mut bad = f.clone();
        bad[2][0] ^= 1; // the signature
        let refs: Vec<&[u8]> = bad.iter().map(|v| v.as_slice()).collect();
        assert!(Message::decode(&refs, &signer).is_err());

        let mut tampered = f.clone();
        tampered[6] = b"{\"x\": 1}".to_vec(); // the content
        let refs: Vec<&[u8]> = tampered.iter().map(|v| v.as_slice()).collect();
        assert!(Message::decode(&refs, &signer).is_err());

        // Unsigned kernels accept anything well formed, and garbage is an error, not a panic.
        let open = Signer::new("");
        assert!(Message::decode(&refs, &open).is_ok());
        assert!(Message::decode(&[b"junk".as_slice()], &open).is_err());
        let garbage: Vec<&[u8]> = vec![DELIMITER, b"", b"{", b"{}", b"{}", b"{}"];
        assert!(Message::decode(&garbage, &open).is_err());
    }

    #[test]
    fn connection_file() {
        let c = Connection::parse(
            r#"{"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4,
                "hb_port": 5, "ip": "127.0.0.1", "key": "k", "transport": "tcp",
                "signature_scheme": "hmac-sha256", "kernel_name": "arr"}"#,
        )
        .unwrap();
        assert_eq!(c.endpoint(c.hb_port), "tcp://127.0.0.1:5");
        assert!(Connection::parse("{}").is_err());
        assert!(Connection::parse("nope").is_err());
    }
}
