use crate::auth::ConnectionTLSConfig;
#[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
use crate::messages::HelloBuilder;
#[cfg(feature = "unstable-bolt-protocol-impl-v2")]
use {
    crate::bolt::{
        ConnectionsHints, ExpectedResponse, Hello, HelloBuilder, Message, MessageResponse, Reset,
        Summary,
    },
    log::debug,
};

#[cfg(feature = "unstable-bolt-protocol-impl-v2")]
use crate::routing::{Route, RoutingTable};
use crate::{
    BoltMap, BoltString, BoltType,
    connection::stream::ConnectionStream,
    errors::{Error, Result},
    messages::{BoltRequest, BoltResponse},
    version::Version,
};
use bytes::{BufMut, Bytes, BytesMut};
use log::{info, warn};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime, pem::PemObject};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::BuilderVerifierExt;
use std::fmt::{Debug, Display, Formatter};
use std::time::Duration;
use std::{fs::File, io::BufReader, mem, sync::Arc};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufStream},
    net::TcpStream,
};
use tokio_rustls::{
    TlsConnector,
    rustls::{
        ClientConfig, RootCertStore,
        pki_types::{IpAddr, Ipv4Addr, Ipv6Addr, ServerName},
    },
};
use url::{Host, Url};

const MAX_CHUNK_SIZE: usize = 65_535 - mem::size_of::<u16>();
const SUCCESS_SIGNATURE: u8 = 0x70;
const RECORD_SIGNATURE: u8 = 0x71;
const IGNORED_SIGNATURE: u8 = 0x7e;
const FAILURE_SIGNATURE: u8 = 0x7f;

#[cfg(test)]
mod reuse_tests;

#[derive(Debug)]
pub struct Connection {
    version: Version,
    stream: BufStream<ConnectionStream>,
    /// Timeout applied to recv operations to prevent hanging on broken connections.
    recv_timeout: Duration,
    pending_responses: usize,
    io_in_progress: bool,
    /// Back in Bolt's READY state with no transaction open: set after a transaction committed
    /// or rolled back, cleared by any request. The pool skips the RESET for such a connection
    /// (vendor/README.md).
    clean: bool,
    /// When the last response arrived: a connection idle longer is checked with RESET anyway.
    last_used: std::time::Instant,
    #[allow(unused)]
    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    hints: Option<ConnectionsHints>,
}

impl Connection {
    pub(crate) async fn new(info: &ConnectionInfo) -> Result<Self> {
        let mut connection = Self::prepare(&info.prepare).await?;
        let hello = info.init.to_hello(connection.version);
        connection.hello(hello).await?;
        Ok(connection)
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// Configure TCP keepalive on the given `TcpStream` using `socket2`.
    fn configure_tcp_keepalive(stream: &TcpStream, keepalive: Option<Duration>) -> Result<()> {
        if let Some(interval) = keepalive {
            let sock_ref = socket2::SockRef::from(stream);
            let keepalive = socket2::TcpKeepalive::new()
                .with_time(interval)
                .with_interval(Duration::from_secs(10));
            #[cfg(not(windows))]
            let keepalive = keepalive.with_retries(3);
            sock_ref.set_tcp_keepalive(&keepalive)?;
        }
        Ok(())
    }

    pub(crate) async fn prepare(opts: &PrepareOpts) -> Result<Self> {
        let timeout_dur = opts.connection_timeout;
        let connect_future = async {
            match &opts.host {
                Host::Domain(domain) => TcpStream::connect((&**domain, opts.port)).await,
                Host::Ipv4(ip) => TcpStream::connect((*ip, opts.port)).await,
                Host::Ipv6(ip) => TcpStream::connect((*ip, opts.port)).await,
            }
        };
        let stream = tokio::time::timeout(timeout_dur, connect_future)
            .await
            .map_err(|_| Error::ConnectionTimedOut)??;

        // Configure TCP keepalive on the raw socket
        Self::configure_tcp_keepalive(&stream, opts.tcp_keepalive)?;
        // Aiden patch: without TCP_NODELAY a Bolt request that spans segments waits for the
        // peer's delayed ACK (~40 ms on Linux); see vendor/README.md.
        stream.set_nodelay(true)?;

        Ok(match &opts.encryption {
            Some((connector, domain)) => {
                let mut stream = connector.connect(domain.clone(), stream).await?;
                let version = Self::init(&mut stream).await?;
                Self::create(stream, version, timeout_dur)
            }
            None => {
                let mut stream = stream;
                let version = Self::init(&mut stream).await?;
                Self::create(stream, version, timeout_dur)
            }
        })
    }

    async fn init<A: AsyncWrite + AsyncRead + Unpin>(stream: &mut A) -> Result<Version> {
        stream.write_all_buf(&mut Self::init_msg()).await?;
        stream.flush().await?;

        let mut response = [0, 0, 0, 0];
        stream.read_exact(&mut response).await?;
        let version = Version::parse(response)?;
        info!("Connected to Neo4j with version {version}");
        Ok(version)
    }

    fn create(
        stream: impl Into<ConnectionStream>,
        version: Version,
        recv_timeout: Duration,
    ) -> Connection {
        Connection {
            version,
            stream: BufStream::new(stream.into()),
            recv_timeout,
            pending_responses: 0,
            io_in_progress: false,
            clean: false,
            last_used: std::time::Instant::now(),
            #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
            hints: None,
        }
    }

    fn init_msg() -> Bytes {
        let mut init = BytesMut::with_capacity(20);
        init.put_slice(&[0x60, 0x60, 0xB0, 0x17]);
        Version::add_supported_versions(&mut init);
        init.freeze()
    }

    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    async fn hello(&mut self, req: BoltRequest) -> Result<()> {
        match self.send_recv(req).await? {
            BoltResponse::Success(_msg) => Ok(()),
            BoltResponse::Failure(msg) => {
                Err(Error::AuthenticationError(msg.get("message").unwrap()))
            }
            msg => Err(msg.into_error("HELLO")),
        }
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    async fn hello(&mut self, hello: Hello<'_>) -> Result<()> {
        let hello = self.send_recv_as(hello).await?;

        match hello {
            Summary::Success(msg) => {
                self.hints = msg.metadata.hints;
                Ok(())
            }
            Summary::Ignored => Err(Error::RequestIgnoredError),
            Summary::Failure(msg) => Err(Error::AuthenticationError(msg.message)),
        }
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    pub async fn route(&mut self, route: Route) -> Result<RoutingTable> {
        debug!("Routing request: {}", route);
        let route = self.send_recv_as(route).await?;

        match route {
            Summary::Success(msg) => Ok(msg.metadata.rt),
            Summary::Ignored => Err(Error::RequestIgnoredError),
            Summary::Failure(msg) => Err(Error::RoutingTableError((msg.code, msg.message))),
        }
    }

    pub async fn reset(&mut self) -> Result<()> {
        #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
        {
            match self.send_recv(BoltRequest::reset()).await? {
                BoltResponse::Success(_) => Ok(()),
                BoltResponse::Failure(f) => Err(Error::Neo4j(f.into_error())),
                msg => Err(msg.into_error("RESET")),
            }
        }

        #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
        {
            match self.send_recv_as(Reset).await? {
                Summary::Success(_) => Ok(()),
                Summary::Failure(err) => Err(Error::ConnectionClosed(err)),
                msg => Err(Error::UnexpectedMessage(format!(
                    "unexpected response for RESET: {:?}",
                    msg
                ))),
            }
        }
    }

    pub async fn send_recv(&mut self, message: BoltRequest) -> Result<BoltResponse> {
        self.send(message).await?;
        self.recv().await
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    #[allow(unused)]
    pub(crate) async fn send_recv_as<T: Message + ExpectedResponse>(
        &mut self,
        message: T,
    ) -> Result<T::Response> {
        self.send_as(message).await?;
        self.recv_as().await
    }

    pub async fn send(&mut self, message: BoltRequest) -> Result<()> {
        let bytes: Bytes = message.into_bytes(self.version)?;
        self.send_bytes(bytes).await
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    #[allow(unused)]
    pub(crate) async fn send_as<T: Message>(&mut self, message: T) -> Result<()> {
        let bytes = message.to_bytes()?;
        self.send_bytes(bytes).await
    }

    pub async fn recv(&mut self) -> Result<BoltResponse> {
        let bytes = tokio::time::timeout(self.recv_timeout, self.recv_bytes())
            .await
            .map_err(|_| Error::ConnectionTimedOut)??;
        self.complete_response(&bytes)?;
        BoltResponse::parse(self.version, bytes)
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    #[allow(unused)]
    pub(crate) async fn recv_as<T: MessageResponse>(&mut self) -> Result<T> {
        let bytes = tokio::time::timeout(self.recv_timeout, self.recv_bytes())
            .await
            .map_err(|_| Error::ConnectionTimedOut)??;
        self.complete_response(&bytes)?;
        Ok(T::parse(bytes)?)
    }

    pub(crate) fn is_reusable(&self) -> bool {
        self.pending_responses == 0 && !self.io_in_progress
    }

    /// The connection is known to be READY with nothing open (a transaction just ended).
    pub(crate) fn mark_clean(&mut self) {
        self.clean = self.is_reusable();
    }

    /// Reusable without a RESET: clean, and used recently enough that the server cannot have
    /// dropped it unnoticed (a restart takes longer than this).
    pub(crate) fn is_fresh_and_clean(&self, within: Duration) -> bool {
        self.clean && self.is_reusable() && self.last_used.elapsed() < within
    }

    /// Receives the responses that are still outstanding for requests already sent,
    /// so that a connection returned to the pool with a request in flight can be
    /// reused. The responses are not decoded, only counted. A read that was
    /// interrupted midway cannot be recovered because the framing is unknown.
    pub(crate) async fn drain_pending_responses(&mut self) -> Result<()> {
        if self.io_in_progress {
            return Err(Error::IncompleteBoltExchange);
        }
        while self.pending_responses > 0 {
            let bytes = tokio::time::timeout(self.recv_timeout, self.recv_bytes())
                .await
                .map_err(|_| Error::ConnectionTimedOut)??;
            self.complete_response(&bytes)?;
        }
        Ok(())
    }

    fn complete_response(&mut self, bytes: &[u8]) -> Result<()> {
        if self.pending_responses == 0 {
            return Err(Error::UnexpectedMessage("unsolicited Bolt response".into()));
        }
        match bytes.get(1).copied() {
            Some(SUCCESS_SIGNATURE | FAILURE_SIGNATURE | IGNORED_SIGNATURE) => {
                self.pending_responses -= 1
            }
            Some(RECORD_SIGNATURE) => {}
            _ => {
                return Err(Error::UnexpectedMessage(
                    "unknown Bolt response signature".into(),
                ));
            }
        }
        self.io_in_progress = false;
        self.last_used = std::time::Instant::now();
        Ok(())
    }

    async fn send_bytes(&mut self, bytes: Bytes) -> Result<()> {
        self.send_pipelined([bytes]).await
    }

    /// Sends several requests in a single flush and expects one response per request.
    ///
    /// The server answers pipelined requests in order, so the caller must receive
    /// every response before the connection is reusable again. After a FAILURE,
    /// the server answers each of the following requests with IGNORED.
    pub(crate) async fn send_pipelined(
        &mut self,
        messages: impl IntoIterator<Item = Bytes>,
    ) -> Result<()> {
        if !self.is_reusable() {
            return Err(Error::IncompleteBoltExchange);
        }
        self.io_in_progress = true;
        self.clean = false;
        for bytes in messages {
            self.pending_responses += 1;
            self.write_message(&bytes).await?;
        }
        self.stream.flush().await?;
        self.io_in_progress = false;
        Ok(())
    }

    async fn write_message(&mut self, bytes: &Bytes) -> Result<()> {
        Self::dbg("send", bytes);
        let end_marker: [u8; 2] = [0, 0];
        for c in bytes.chunks(MAX_CHUNK_SIZE) {
            self.stream.write_u16(c.len() as u16).await?;
            self.stream.write_all(c).await?;
        }
        self.stream.write_all(&end_marker).await?;
        Ok(())
    }

    async fn recv_bytes(&mut self) -> Result<Bytes> {
        if self.io_in_progress {
            return Err(Error::IncompleteBoltExchange);
        }
        self.io_in_progress = true;
        let mut bytes = BytesMut::new();
        let mut chunk_size = 0;
        while chunk_size == 0 {
            chunk_size = self.read_chunk_size().await?;
        }

        while chunk_size > 0 {
            self.read_chunk(chunk_size, &mut bytes).await?;
            chunk_size = self.read_chunk_size().await?;
        }

        let bytes = bytes.freeze();
        Self::dbg("recv", &bytes);
        Ok(bytes)
    }

    async fn read_chunk_size(&mut self) -> Result<usize> {
        Ok(usize::from(self.stream.read_u16().await?))
    }

    async fn read_chunk(&mut self, chunk_size: usize, buf: &mut BytesMut) -> Result<()> {
        // Ensure the buffer has enough capacity
        if buf.capacity() < (buf.len() + chunk_size) {
            buf.reserve(chunk_size);
        }
        let mut remaining = chunk_size;
        while remaining > 0 {
            let received = (&mut self.stream)
                .take(remaining as u64)
                .read_buf(buf)
                .await?;
            if received == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
            }
            remaining -= received;
        }
        Ok(())
    }

    #[cfg(not(all(feature = "unstable-serde-packstream-format", test, debug_assertions)))]
    fn dbg(_tag: &str, _bytes: &Bytes) {}

    #[cfg(all(feature = "unstable-serde-packstream-format", test, debug_assertions))]
    fn dbg(tag: &str, bytes: &Bytes) {
        eprintln!("[{}] {:?}", tag, crate::packstream::Dbg(bytes));
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Routing {
    No,
    Yes(Arc<[(BoltString, BoltString)]>),
}

impl From<Routing> for Option<BoltMap> {
    fn from(routing: Routing) -> Self {
        match routing {
            Routing::No => None,
            Routing::Yes(routing) => Some(
                routing
                    .iter()
                    .map(|(k, v)| (k.clone(), BoltType::String(v.clone())))
                    .collect(),
            ),
        }
    }
}

impl Display for Routing {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        match self {
            Routing::No => f.write_str(""),
            Routing::Yes(routing) => {
                let routing = routing
                    .iter()
                    .map(|(k, v)| format!("{k}: \"{v}\""))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(f, "{routing}")
            }
        }
    }
}

#[derive(Clone)]
pub(crate) struct PrepareOpts {
    pub(crate) host: Host<Arc<str>>,
    pub(crate) port: u16,
    pub(crate) encryption: Option<(TlsConnector, ServerName<'static>)>,
    pub(crate) connection_timeout: Duration,
    pub(crate) tcp_keepalive: Option<Duration>,
}

impl Debug for PrepareOpts {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrepareOpts")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("encryption", &self.encryption.is_some())
            .finish()
    }
}

#[derive(Clone)]
pub(crate) struct InitOpts {
    pub(crate) user: Arc<str>,
    pub(crate) password: Arc<str>,
    pub(crate) routing: Routing,
}

impl Debug for InitOpts {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitOpts")
            .field("user", &self.user)
            .field("password", &"***")
            .field("routing", &self.routing)
            .finish()
    }
}

impl InitOpts {
    #[cfg(not(feature = "unstable-bolt-protocol-impl-v2"))]
    pub(crate) fn to_hello(&self, version: Version) -> BoltRequest {
        HelloBuilder::new(&*self.user, &*self.password)
            .with_routing(self.routing.clone())
            .build(version)
    }

    #[cfg(feature = "unstable-bolt-protocol-impl-v2")]
    pub(crate) fn to_hello(&self, version: Version) -> Hello<'_> {
        match self.routing {
            Routing::No => HelloBuilder::new(&self.user, &self.password).build(version),
            Routing::Yes(ref routing) => HelloBuilder::new(&self.user, &self.password)
                .with_routing(
                    routing
                        .iter()
                        .map(|(k, v)| (k.value.as_str(), v.value.as_str())),
                )
                .build(version),
        }
    }
}

#[derive(Clone)]
pub(crate) struct ConnectionInfo {
    pub(crate) prepare: PrepareOpts,
    pub(crate) init: InitOpts,
}

impl Debug for ConnectionInfo {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionInfo")
            .field("user", &self.init.user)
            .field("password", &"***")
            .field("host", &self.prepare.host)
            .field("port", &self.prepare.port)
            .field("routing", &self.init.routing)
            .field("encryption", &self.prepare.encryption.is_some())
            .finish_non_exhaustive()
    }
}

impl ConnectionInfo {
    pub(crate) fn new(
        uri: &str,
        user: &str,
        password: &str,
        tls_config: &ConnectionTLSConfig,
        connection_timeout: Duration,
        tcp_keepalive: Option<Duration>,
    ) -> Result<Self> {
        let mut url = NeoUrl::parse(uri)?;

        let (routing, encryption, validation) = match url.scheme() {
            "bolt" | "" => (false, false, false),
            "bolt+s" => (false, true, true),
            "bolt+ssc" => (false, true, false),
            "neo4j" => (true, false, false),
            "neo4j+s" => (true, true, true),
            "neo4j+ssc" => (true, true, false),
            otherwise => return Err(Error::UnsupportedScheme(otherwise.to_owned())),
        };

        let encryption = encryption
            .then(|| {
                // do not apply validation if using a self-signed certificate,as the documentation suggests
                let config = if !validation {
                    match tls_config {
                        ConnectionTLSConfig::MutualTLS(mtls) => {
                            ConnectionTLSConfig::MutualTLS(mtls.with_no_validation())
                        }
                        _ => ConnectionTLSConfig::NoSSLValidation,
                    }
                } else {
                    tls_config.clone()
                };
                Self::tls_connector(url.host(), &config)
            })
            .transpose()?;

        let routing = if routing {
            warn!(concat!(
                "Client-side routing is in experimental mode.",
                "It is possible that operations against a cluster (such as Aura) will fail."
            ));
            let context = url.routing_context();
            Routing::Yes(context.into())
        } else {
            Routing::No
        };

        url.warn_on_unexpected_components();

        let host = match url.host() {
            Host::Domain(s) => Host::Domain(Arc::<str>::from(s)),
            Host::Ipv4(d) => Host::Ipv4(d),
            Host::Ipv6(d) => Host::Ipv6(d),
        };

        let prepare = PrepareOpts {
            host,
            port: url.port(),
            encryption,
            connection_timeout,
            tcp_keepalive,
        };

        let init = InitOpts {
            user: user.into(),
            password: password.into(),
            routing,
        };

        Ok(Self { prepare, init })
    }

    fn tls_connector(
        host: Host<&str>,
        tls_config: &ConnectionTLSConfig,
    ) -> Result<(TlsConnector, ServerName<'static>)> {
        let mut root_cert_store = RootCertStore::empty();

        let builder = ClientConfig::builder();
        let config = match tls_config {
            ConnectionTLSConfig::None => builder
                .with_platform_verifier()
                .map_err(std::io::Error::other)?
                .with_no_client_auth(),
            ConnectionTLSConfig::ClientCACertificate(certificate) => {
                let cert_file = File::open(&certificate.cert_file)?;
                let reader = BufReader::new(cert_file);
                let certs = CertificateDer::pem_reader_iter(reader).flatten();
                root_cert_store.add_parsable_certificates(certs);
                builder
                    .with_root_certificates(root_cert_store)
                    .with_no_client_auth()
            }
            ConnectionTLSConfig::NoSSLValidation => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoCertificateVerification))
                .with_no_client_auth(),
            ConnectionTLSConfig::MutualTLS(mutual) => {
                let cert_file = File::open(&mutual.client_cert)?;
                let cert_reader = BufReader::new(cert_file);
                let cert_certs = CertificateDer::pem_reader_iter(cert_reader).flatten();

                let cert_key = File::open(&mutual.client_key)?;
                let key_reader = BufReader::new(cert_key);
                let keys = PrivateKeyDer::pem_reader_iter(key_reader)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(std::io::Error::other);
                let keys = keys?.pop().unwrap();
                if mutual.cert_file.is_some() {
                    let root_cert_file = File::open(mutual.cert_file.as_ref().unwrap())?;
                    let root_reader = BufReader::new(root_cert_file);
                    let root_certs = CertificateDer::pem_reader_iter(root_reader).flatten();
                    root_cert_store.add_parsable_certificates(root_certs);
                    builder
                        .with_root_certificates(root_cert_store)
                        .with_client_auth_cert(cert_certs.collect(), keys)
                        .map_err(|_e| Error::ConnectionError)?
                } else if mutual.validation {
                    builder
                        .with_platform_verifier()
                        .map_err(std::io::Error::other)?
                        .with_client_auth_cert(cert_certs.collect(), keys)
                        .map_err(|_e| Error::ConnectionError)?
                } else {
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(NoCertificateVerification))
                        .with_client_auth_cert(cert_certs.collect(), keys)
                        .map_err(|_e| Error::ConnectionError)?
                }
            }
        };

        let config = Arc::new(config);
        let connector = TlsConnector::from(config);

        let domain = match host {
            Host::Domain(domain) => ServerName::try_from(domain.to_owned())
                .map_err(|_| Error::InvalidDnsName(domain.to_owned()))?,
            Host::Ipv4(ip) => ServerName::IpAddress(IpAddr::V4(Ipv4Addr::from(ip))),
            Host::Ipv6(ip) => ServerName::IpAddress(IpAddr::V6(Ipv6Addr::from(ip))),
        };

        Ok((connector, domain))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NeoUrl(Url);

impl NeoUrl {
    pub(crate) fn parse(uri: &str) -> Result<Self> {
        let url = match Url::parse(uri) {
            Ok(url) if url.has_host() => url,
            // missing scheme
            Ok(_) | Err(url::ParseError::RelativeUrlWithoutBase) => {
                Url::parse(&format!("bolt://{uri}"))?
            }
            Err(err) => return Err(Error::UrlParseError(err)),
        };

        Ok(Self(url))
    }

    pub(crate) fn scheme(&self) -> &str {
        self.0.scheme()
    }

    pub(crate) fn host(&self) -> Host<&str> {
        self.0.host().unwrap()
    }

    pub(crate) fn port(&self) -> u16 {
        self.0.port().unwrap_or(7687)
    }

    fn routing_context(&mut self) -> Vec<(BoltString, BoltString)> {
        vec![(
            "address".into(),
            format!("{}:{}", self.0.host().unwrap(), self.port()).into(),
        )]
    }

    fn warn_on_unexpected_components(&self) {
        if !self.0.username().is_empty() || self.0.password().is_some() {
            warn!(concat!(
                "URI contained auth credentials, which are ignored.",
                "Credentials are passed outside of the URI"
            ));
        }
        if !matches!(self.0.path(), "" | "/") {
            warn!("URI contained a path, which is ignored.");
        }

        if self.0.query().is_some() {
            warn!(concat!(
                "This client does not yet support client-side routing.",
                "The routing context passed as a query to the URI is ignored."
            ));
        }

        if self.0.fragment().is_some() {
            warn!("URI contained a fragment, which is ignored.");
        }
    }
}

impl Display for NeoUrl {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

mod stream {
    use pin_project_lite::pin_project;
    use tokio::{
        io::{AsyncRead, AsyncWrite},
        net::TcpStream,
    };
    use tokio_rustls::client::TlsStream;

    pin_project! {
        #[project = ConnectionStreamProj]
        #[derive(Debug)]
        pub(super) enum ConnectionStream {
            Unencrypted { #[pin] stream: TcpStream },
            Encrypted { #[pin] stream: TlsStream<TcpStream> },
        }
    }

    impl From<TcpStream> for ConnectionStream {
        fn from(stream: TcpStream) -> Self {
            ConnectionStream::Unencrypted { stream }
        }
    }

    impl From<TlsStream<TcpStream>> for ConnectionStream {
        fn from(stream: TlsStream<TcpStream>) -> Self {
            ConnectionStream::Encrypted { stream }
        }
    }

    impl AsyncRead for ConnectionStream {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            match self.project() {
                ConnectionStreamProj::Unencrypted { stream } => stream.poll_read(cx, buf),
                ConnectionStreamProj::Encrypted { stream } => stream.poll_read(cx, buf),
            }
        }
    }

    impl AsyncWrite for ConnectionStream {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<Result<usize, std::io::Error>> {
            match self.project() {
                ConnectionStreamProj::Unencrypted { stream } => stream.poll_write(cx, buf),
                ConnectionStreamProj::Encrypted { stream } => stream.poll_write(cx, buf),
            }
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), std::io::Error>> {
            match self.project() {
                ConnectionStreamProj::Unencrypted { stream } => stream.poll_flush(cx),
                ConnectionStreamProj::Encrypted { stream } => stream.poll_flush(cx),
            }
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), std::io::Error>> {
            match self.project() {
                ConnectionStreamProj::Unencrypted { stream } => stream.poll_shutdown(cx),
                ConnectionStreamProj::Encrypted { stream } => stream.poll_shutdown(cx),
            }
        }

        fn poll_write_vectored(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            bufs: &[std::io::IoSlice<'_>],
        ) -> std::task::Poll<Result<usize, std::io::Error>> {
            match self.project() {
                ConnectionStreamProj::Unencrypted { stream } => {
                    stream.poll_write_vectored(cx, bufs)
                }
                ConnectionStreamProj::Encrypted { stream } => stream.poll_write_vectored(cx, bufs),
            }
        }

        fn is_write_vectored(&self) -> bool {
            match self {
                ConnectionStream::Unencrypted { stream } => stream.is_write_vectored(),
                ConnectionStream::Encrypted { stream } => stream.is_write_vectored(),
            }
        }
    }
}

// Custom verifier that disables certificate validation
struct NoCertificateVerification;

impl Debug for NoCertificateVerification {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoCertificateVerification")
    }
}

impl ServerCertVerifier for NoCertificateVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        // Bypass certificate verification
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        CryptoProvider::get_default()
            .expect("Default Crypto Provider unset")
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use url::Host;

    use super::{Connection, NeoUrl};
    use crate::{errors::Error, version::Version};
    use std::{io::ErrorKind, sync::mpsc, thread, time::Duration};
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::{TcpListener, TcpStream},
    };

    const RECV_TIMEOUT: Duration = Duration::from_secs(30);
    const READ_LOOP_DEADLINE: Duration = Duration::from_secs(5);

    #[test]
    fn should_parse_uri() {
        let url = NeoUrl::parse("bolt://localhost:4242").unwrap();
        assert_eq!(url.port(), 4242);
        assert_eq!(url.host(), Host::Domain("localhost"));
        assert_eq!(url.scheme(), "bolt");
    }

    #[test]
    fn should_parse_uri_without_scheme() {
        let url = NeoUrl::parse("localhost:4242").unwrap();
        assert_eq!(url.port(), 4242);
        assert_eq!(url.host(), Host::Domain("localhost"));
        assert_eq!(url.scheme(), "bolt");
    }

    #[test]
    fn should_parse_ip_uri_without_scheme() {
        let url = NeoUrl::parse("127.0.0.1:4242").unwrap();
        assert_eq!(url.port(), 4242);
        assert_eq!(url.host(), Host::Domain("127.0.0.1"));
        assert_eq!(url.scheme(), "bolt");
    }

    async fn serve_bytes_then_close(bytes: Vec<u8>) -> u16 {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            socket.write_all(&bytes).await.unwrap();
            socket.shutdown().await.unwrap();
        });
        port
    }

    async fn connect(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        Connection::create(stream, Version::V4_4, RECV_TIMEOUT)
    }

    enum ReadOutcome {
        Completed,
        UnexpectedEof,
        OtherError,
    }

    fn recv_bytes_on_worker_thread(server_bytes: Vec<u8>) -> ReadOutcome {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let port = serve_bytes_then_close(server_bytes).await;
                let mut connection = connect(port).await;
                let outcome = match connection.recv_bytes().await {
                    Ok(_) => ReadOutcome::Completed,
                    Err(Error::IOError { detail }) if detail.kind() == ErrorKind::UnexpectedEof => {
                        ReadOutcome::UnexpectedEof
                    }
                    Err(_) => ReadOutcome::OtherError,
                };
                let _ = tx.send(outcome);
            });
        });
        rx.recv_timeout(READ_LOOP_DEADLINE)
            .expect("read loop did not terminate within the deadline")
    }

    #[test]
    fn eof_inside_chunk_body_returns_unexpected_eof() {
        let outcome = recv_bytes_on_worker_thread(vec![0x00, 0x08, 0x01, 0x02, 0x03]);
        assert!(matches!(outcome, ReadOutcome::UnexpectedEof));
    }

    #[test]
    fn eof_before_chunk_header_returns_unexpected_eof() {
        let outcome = recv_bytes_on_worker_thread(Vec::new());
        assert!(matches!(outcome, ReadOutcome::UnexpectedEof));
    }

    #[test]
    fn eof_inside_chunk_header_returns_unexpected_eof() {
        let outcome = recv_bytes_on_worker_thread(vec![0x00]);
        assert!(matches!(outcome, ReadOutcome::UnexpectedEof));
    }

    #[tokio::test]
    async fn noop_chunks_do_not_break_message_reception() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut reset = [0; 6];
            socket.read_exact(&mut reset).await.unwrap();
            assert_eq!(reset, [0, 2, 0xb0, 0x0f, 0, 0]);
            socket
                .write_all(&[
                    0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xB1, 0x70, 0xA0, 0x00, 0x00,
                ])
                .await
                .unwrap();
        });
        let mut connection = connect(port).await;
        connection
            .reset()
            .await
            .expect("a SUCCESS message preceded by NOOP chunks must parse");
        server.await.unwrap();
    }
}
