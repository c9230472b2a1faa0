//! The SMTP transport of `mmci post email`: how the connection is
//! secured (STARTTLS by default, TLS, or none for a local relay), the
//! server, CA and credentials checked before anything is sent, and the
//! message's exact bytes handed to the server (lettre), bounded in time.

use std::path::PathBuf;
use std::time::Duration;

use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::{EmailError, Outgoing};

/// How the SMTP connection is secured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SmtpTls {
    /// Plain connection upgraded with STARTTLS, which must succeed (port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No encryption: only for a trusted relay on this machine.
    None,
}

#[derive(Clone, Debug)]
pub struct SmtpOptions {
    /// HOST or HOST:PORT [default port: 587, 465 for --smtp-tls tls, 25 for none].
    pub server: String,
    pub tls: SmtpTls,
    /// Extra CA certificate (PEM) to trust, e.g. a company relay's.
    pub ca: Option<PathBuf>,
    pub user: Option<String>,
    /// Environment variable with the password [default: MMCI_SMTP_PASSWORD].
    pub password_env: String,
    pub password_file: Option<PathBuf>,
    pub timeout: Duration,
}

impl SmtpOptions {
    fn host_port(&self) -> Result<(String, u16), EmailError> {
        let default = match self.tls {
            SmtpTls::Starttls => 587,
            SmtpTls::Tls => 465,
            SmtpTls::None => 25,
        };
        let s = self.server.trim();
        if s.is_empty() {
            return Err(EmailError::BadSmtp(self.server.clone()));
        }
        match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => {
                let port = p
                    .parse()
                    .map_err(|_| EmailError::BadSmtp(self.server.clone()))?;
                Ok((h.to_string(), port))
            }
            _ => Ok((s.to_string(), default)),
        }
    }

    fn password(&self) -> Result<Option<String>, EmailError> {
        if self.user.is_none() {
            return Ok(None);
        }
        if let Some(path) = &self.password_file {
            let p = std::fs::read_to_string(path).map_err(|source| EmailError::PasswordFile {
                path: path.clone(),
                source,
            })?;
            let p = p.trim_end_matches(['\r', '\n']).to_string();
            crate::post::remember_secret(&p);
            return Ok(Some(p));
        }
        let env = if self.password_env.is_empty() {
            "MMCI_SMTP_PASSWORD"
        } else {
            &self.password_env
        };
        let p = std::env::var(env)
            .ok()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| EmailError::NoPassword(env.to_string()))?;
        crate::post::remember_secret(&p);
        Ok(Some(p))
    }
}

/// A configured SMTP transport, checked before anything is sent.
pub struct Smtp {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    server: String,
    timeout: Duration,
}

impl Smtp {
    /// Validates the options (server, CA, credentials) without connecting.
    pub fn new(opts: &SmtpOptions) -> Result<Smtp, EmailError> {
        let (host, port) = opts.host_port()?;
        let server = format!("{host}:{port}");
        let smtp_err = |e: lettre::transport::smtp::Error| EmailError::Smtp {
            server: server.clone(),
            message: smtp_message(&e),
        };
        let tls = match opts.tls {
            SmtpTls::None => Tls::None,
            SmtpTls::Starttls | SmtpTls::Tls => {
                let mut params = TlsParameters::builder(host.clone());
                if let Some(path) = &opts.ca {
                    let pem = std::fs::read(path).map_err(|source| EmailError::Ca {
                        path: path.clone(),
                        source,
                    })?;
                    let cert = Certificate::from_pem(&pem).map_err(|e| EmailError::BadCa {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
                    params = params.add_root_certificate(cert);
                }
                let params = params.build_rustls().map_err(smtp_err)?;
                if opts.tls == SmtpTls::Tls {
                    Tls::Wrapper(params)
                } else {
                    Tls::Required(params)
                }
            }
        };
        let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(port)
            .tls(tls)
            .timeout(Some(opts.timeout));
        if let Some(user) = &opts.user {
            let password = opts.password()?.unwrap_or_default();
            // PLAIN only (inside TLS): after a refused PLAIN, lettre's
            // fallback to LOGIN waited for the timeout on aiosmtpd instead
            // of reporting the refusal.
            b = b
                .credentials(Credentials::new(user.clone(), password))
                .authentication(vec![
                    lettre::transport::smtp::authentication::Mechanism::Plain,
                ]);
        }
        Ok(Smtp {
            transport: b.build(),
            server,
            timeout: opts.timeout,
        })
    }

    /// Sends the message's exact bytes; returns the server's final answer.
    pub async fn send(&self, o: &Outgoing) -> Result<String, EmailError> {
        // lettre ends DATA with CRLF.CRLF after the bytes: without this the
        // server would store the message with one more empty line than
        // the dry run showed.
        let bytes = o.bytes.strip_suffix(b"\r\n").unwrap_or(&o.bytes);
        // lettre's timeout covers each read and write; a server that stops
        // answering mid-exchange (e.g. after AUTH) is bounded here too.
        let whole = self.timeout * 3;
        let r = tokio::time::timeout(whole, self.transport.send_raw(o.message.envelope(), bytes))
            .await
            .map_err(|_| EmailError::Smtp {
                server: self.server.clone(),
                message: format!(
                    "no answer within {} s (--smtp-timeout {} s per exchange): delivery not confirmed",
                    whole.as_secs(),
                    self.timeout.as_secs()
                ),
            })?
            .map_err(|e| EmailError::Smtp {
                server: self.server.clone(),
                message: smtp_message(&e),
            })?;
        Ok(format!(
            "{} {}",
            r.code(),
            r.message().collect::<Vec<_>>().join(" ")
        ))
    }

    pub fn server(&self) -> &str {
        &self.server
    }
}

/// lettre's error and its causes on one line, with a hint for the usual
/// cases.
fn smtp_message(e: &lettre::transport::smtp::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = std::error::Error::source(e);
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    let mut text = parts.join(": ");
    if e.is_permanent() {
        text.push_str(" (the server refused the message: nothing was delivered)");
    } else if e.is_transient() {
        text.push_str(" (a temporary refusal: try again later)");
    }
    text
}
