//! NKeys and credentials files against a real nats-server (feature `nats`):
//! the server knows a user by its public key (or, in operator mode, trusts
//! the account that signed the user's JWT); the client proves it with the
//! seed. Each test starts its own server on a free loopback port and runs
//! under a deadline; without nats-server it says "skipped: nats-server not
//! found" and passes (fails under `COMMUTATOR_REQUIRE_NATS=1`). Run:
//! `cargo test --features nats --test nats_auth`.
#![cfg(feature = "nats")]

mod nats_support;

use commutator::nats::{Nats, Options};
use commutator::prelude::*;
use nats_support::actors::LIMIT;
use nats_support::with_server;
use nkeys::KeyPair;
use std::path::PathBuf;
use std::time::Duration;

/// A file of the test's own in the temporary directory.
fn scratch(test: &str, name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("commutator-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("written");
    path
}

fn quick(url: &str) -> Options {
    Options::new(url).connect_timeout(Duration::from_secs(5))
}

#[test]
fn an_nkey_user_is_let_in_with_its_seed_and_refused_with_another() {
    let test = "an_nkey_user_is_let_in_with_its_seed_and_refused_with_another";
    let user = KeyPair::new_user();
    let config = format!(
        "authorization {{ users = [ {{ nkey: {} }} ] }}\n",
        user.public_key()
    );
    let config = scratch(test, "nkey.conf", &config);
    let args = ["-c".to_string(), config.display().to_string()];
    let seed = user.seed().expect("a seed");
    with_server(test, &args, LIMIT, move |url| {
        let nats = Nats::connect(quick(&url).nkey(seed.clone())).expect("let in");
        nats.publish_bytes("hello", "x").expect("published");
        nats.flush(Duration::from_secs(5))
            .expect("the server has it");

        let stranger = KeyPair::new_user().seed().expect("a seed");
        let refused = Nats::connect(quick(&url).nkey(stranger)).expect_err("refused");
        assert_eq!(refused.code(), ErrorCode::Unauthorized, "{refused:#}");
        let text = format!("{refused:#} {refused:?}");
        assert!(!text.contains(&seed), "the seed is never printed: {text}");

        let nothing = Nats::connect(quick(&url)).expect_err("refused");
        assert_eq!(nothing.code(), ErrorCode::Unauthorized, "{nothing:#}");
    });
}

#[test]
fn a_credentials_file_that_cannot_be_read_or_parsed_is_a_clear_error() {
    let test = "a_credentials_file_that_cannot_be_read_or_parsed_is_a_clear_error";
    // No server is needed: the file is read before connecting.
    let missing = std::env::temp_dir().join("commutator-no-such-file.creds");
    let error =
        Nats::connect(quick("nats://127.0.0.1:1").credentials_file(&missing)).expect_err("no file");
    assert_eq!(error.code(), ErrorCode::InvalidArgument, "{error:#}");
    assert!(format!("{error:#}").contains("commutator-no-such-file.creds"));

    let garbage = scratch(test, "garbage.creds", "secret-looking garbage\n");
    let error = Nats::connect(quick("nats://127.0.0.1:1").credentials_file(&garbage))
        .expect_err("not credentials");
    assert_eq!(error.code(), ErrorCode::InvalidArgument, "{error:#}");
    assert!(
        !format!("{error:#} {error:?}").contains("secret-looking"),
        "the contents are never printed"
    );
}

/// Base64url without padding, as JWTs use it.
fn b64url(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// A NATS JWT (v2) about `subject`, signed by `issuer`.
fn jwt(issuer: &KeyPair, subject: &str, name: &str, nats: &str) -> String {
    let header = b64url(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let claims = format!(
        r#"{{"jti":"{}","iat":1700000000,"iss":"{}","name":"{name}","sub":"{subject}","nats":{nats}}}"#,
        name.to_uppercase(),
        issuer.public_key()
    );
    let signed = format!("{header}.{}", b64url(claims.as_bytes()));
    let signature = issuer.sign(signed.as_bytes()).expect("signed");
    format!("{signed}.{}", b64url(&signature))
}

#[test]
fn a_credentials_file_logs_in_to_a_server_in_operator_mode() {
    let test = "a_credentials_file_logs_in_to_a_server_in_operator_mode";
    let (operator, account, user) = (
        KeyPair::new_operator(),
        KeyPair::new_account(),
        KeyPair::new_user(),
    );
    let operator_jwt = jwt(
        &operator,
        &operator.public_key(),
        "op",
        r#"{"type":"operator","version":2}"#,
    );
    let account_jwt = jwt(
        &operator,
        &account.public_key(),
        "acc",
        r#"{"limits":{"subs":-1,"data":-1,"payload":-1,"imports":-1,"exports":-1,"wildcards":true,"conn":-1,"leaf":-1},"default_permissions":{"pub":{},"sub":{}},"type":"account","version":2}"#,
    );
    let user_jwt = jwt(
        &account,
        &user.public_key(),
        "user",
        r#"{"pub":{},"sub":{},"subs":-1,"data":-1,"payload":-1,"type":"user","version":2}"#,
    );
    let config = format!(
        "operator: {operator_jwt}\nresolver: MEMORY\nresolver_preload: {{ {}: {account_jwt} }}\n",
        account.public_key()
    );
    let config = scratch(test, "operator.conf", &config);
    let creds = |jwt: &str, seed: &str| {
        format!(
            "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
        )
    };
    let good = scratch(
        test,
        "user.creds",
        &creds(&user_jwt, &user.seed().expect("a seed")),
    );
    // The same JWT with a seed that is not its user's.
    let stranger = KeyPair::new_user().seed().expect("a seed");
    let bad = scratch(test, "stranger.creds", &creds(&user_jwt, &stranger));
    let args = ["-c".to_string(), config.display().to_string()];
    with_server(test, &args, LIMIT, move |url| {
        let nats = Nats::connect(quick(&url).credentials_file(&good)).expect("let in");
        nats.publish_bytes("hello", "x").expect("published");
        nats.flush(Duration::from_secs(5))
            .expect("the server has it");
        let refused = Nats::connect(quick(&url).credentials_file(&bad)).expect_err("refused");
        assert_eq!(refused.code(), ErrorCode::Unauthorized, "{refused:#}");
        let nothing = Nats::connect(quick(&url)).expect_err("refused");
        assert_eq!(nothing.code(), ErrorCode::Unauthorized, "{nothing:#}");
    });
}
