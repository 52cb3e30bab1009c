/**
 * With no credential option, each cloud connector (built under its Python name) signs in through
 * its cloud's default chain. Each case runs the connector in a child process whose environment
 * holds only what the case names, against local servers:
 *
 * - AWS: ElasticMQ. The SDK default chain finds keys in the environment, or in a shared
 *   credentials file + AWS_PROFILE; with neither, the receive fails naming the chain. (ElasticMQ
 *   does not verify signatures, so this proves the chain is consulted and used, not that AWS
 *   would accept the keys.)
 * - Azure: DefaultAzureCredential, through its managed-identity step (the App Service form,
 *   IDENTITY_ENDPOINT + IDENTITY_HEADER) pointed at a local token server; the Event Grid receive
 *   goes over TLS (a certificate made for the test) to a local server that records the bearer
 *   token. What it cannot reach: Microsoft Entra ID itself and the other steps of the chain.
 * - Google Cloud: Application Default Credentials from GOOGLE_APPLICATION_CREDENTIALS (a service
 *   account file with a key made for the test); the Pub/Sub calls go over TLS to a local HTTP/2
 *   server (the child resolves *.googleapis.com to it) that records the bearer token, which must
 *   verify with that key. The Pub/Sub fake skips auth,
 *   so it is not used here. What it cannot reach: Google's token service and metadata server.
 */
import { execFileSync, spawn } from "node:child_process";
import { generateKeyPairSync, verify } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, describe, expect, it } from "vitest";
import { startSqs } from "../support/sqs.js";
import { requireService } from "../support/services.js";

const childScript = fileURLToPath(new URL("./credentials-child.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ll-creds-"));
const servers: Array<Server | Http2SecureServer> = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(dir, { recursive: true, force: true });
});

interface ChildResult {
  ok: boolean;
  n?: number;
  error?: string;
}

/** Run the child with exactly `env` (plus PATH and an empty HOME): nothing leaks from this process. */
function runChild(args: string[], env: Record<string, string>): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), childScript, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: join(dir, "home"), METADATA_SERVER_DETECTION: "none", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("error", reject);
    child.on("exit", () => {
      const last = out.trim().split("\n").at(-1) ?? "";
      try {
        resolve(JSON.parse(last) as ChildResult);
      } catch {
        reject(new Error(`child printed no result:\n${out}`));
      }
    });
  });
}

async function listen<S extends Server | Http2SecureServer>(server: S): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** A self-signed certificate for 127.0.0.1 / localhost, trusted by the child through its environment. */
function certificate(): { key: string; cert: string; certFile: string } {
  const keyFile = join(dir, "tls.key");
  const certFile = join(dir, "tls.crt");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:pubsub.googleapis.com", "-keyout", keyFile, "-out", certFile,
  ], { stdio: "ignore" });
  return { key: readFileSync(keyFile, "utf8"), cert: readFileSync(certFile, "utf8"), certFile };
}

// ---------------------------------------------------------------------------------------------

const sqs = await requireService("connectors/sqs (ElasticMQ)", () => startSqs());
afterAll(async () => sqs?.stop());

describe.skipIf(!sqs)("AWSSQSConnector without credential options: the AWS SDK default chain", () => {
  const queueWithOne = async (name: string) => {
    const url = await sqs!.createQueue(`creds-${name}-${Date.now()}`);
    await sqs!.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: '{"order_id": 1}' }));
    return url;
  };
  const noFiles = { AWS_EC2_METADATA_DISABLED: "true", AWS_REGION: "us-east-1", AWS_CONFIG_FILE: join(dir, "none"), AWS_SHARED_CREDENTIALS_FILE: join(dir, "none") };

  it("keys in the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)", async () => {
    const url = await queueWithOne("env");
    const r = await runChild(["sqs", url], { ...noFiles, AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "env-secret" });
    expect(r).toEqual({ ok: true, n: 1 });
  });

  it("a shared credentials file and AWS_PROFILE", async () => {
    const url = await queueWithOne("profile");
    const file = join(dir, "aws-credentials");
    writeFileSync(file, "[lakelogic]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n");
    const r = await runChild(["sqs", url], { ...noFiles, AWS_SHARED_CREDENTIALS_FILE: file, AWS_PROFILE: "lakelogic" });
    expect(r).toEqual({ ok: true, n: 1 });
  });

  it("nothing the chain can find: the receive fails naming the chain", async () => {
    const url = await queueWithOne("none");
    const r = await runChild(["sqs", url], noFiles);
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/no AWS credentials: the default chain/);
  });
});

describe("AzureEventGridConnector without accessKey: DefaultAzureCredential", () => {
  it("gets a token from the managed identity endpoint and sends it as the bearer token", async () => {
    const tls = certificate();
    const tokenRequests: Array<{ url: string; header: string | undefined }> = [];
    const tokenPort = await listen(
      createHttpServer((req, res) => {
        tokenRequests.push({ url: req.url ?? "", header: req.headers["x-identity-header"] as string | undefined });
        const expiresOn = Math.floor(Date.now() / 1000) + 3600;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ access_token: "azure-token-123", expires_on: String(expiresOn), resource: "https://eventgrid.azure.net", token_type: "Bearer" }));
      }),
    );
    const seen: Array<{ url: string; authorization: string | undefined }> = [];
    const egPort = await listen(
      createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
        seen.push({ url: req.url ?? "", authorization: req.headers.authorization });
        req.resume();
        req.on("end", () => {
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ value: [] }));
        });
      }),
    );
    const r = await runChild(["eventgrid", `https://127.0.0.1:${egPort}`, "orders"], {
      IDENTITY_ENDPOINT: `http://127.0.0.1:${tokenPort}/msi/token`,
      IDENTITY_HEADER: "identity-header-value",
      NODE_EXTRA_CA_CERTS: tls.certFile,
    });
    expect(r).toEqual({ ok: true, n: 0 });
    expect(tokenRequests.length).toBeGreaterThan(0);
    expect(tokenRequests[0]!.header).toBe("identity-header-value");
    expect(decodeURIComponent(tokenRequests[0]!.url)).toMatch(/resource=https:\/\/eventgrid\.azure\.net/);
    const receive = seen.find((s) => s.url.includes("/topics/orders/eventsubscriptions/lakelogic:receive"));
    expect(receive?.authorization).toBe("Bearer azure-token-123");
  });
});

describe("GCPPubSubConnector without credentials: Application Default Credentials", () => {
  it("reads GOOGLE_APPLICATION_CREDENTIALS and sends a token signed with that file's key", async () => {
    const tls = certificate();
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const keyFile = join(dir, "service-account.json");
    writeFileSync(
      keyFile,
      JSON.stringify({
        type: "service_account",
        project_id: "lakelogic-adc",
        private_key_id: "test-key",
        private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
        client_email: "reader@lakelogic-adc.iam.gserviceaccount.com",
        client_id: "1",
        // Never called for Google's APIs (self-signed JWT); a refused local port if it were.
        token_uri: "http://127.0.0.1:1/token",
      }),
    );
    const authorizations: string[] = [];
    const grpcServer = createSecureServer({ key: tls.key, cert: tls.cert });
    grpcServer.on("stream", (stream, headers) => {
      authorizations.push(String(headers.authorization ?? ""));
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "7", "grpc-message": "denied by the test" }, { endStream: true });
    });
    const grpcPort = await listen(grpcServer);
    const r = await runChild(["pubsub", "lakelogic-adc", "orders-sub"], {
      GOOGLE_APPLICATION_CREDENTIALS: keyFile,
      PUBSUB_TEST_ENDPOINT: `pubsub.googleapis.com:${grpcPort}`,
      GOOGLEAPIS_AT: "127.0.0.1",
      GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: tls.certFile,
      CHILD_RECEIVE_MS: "8000",
    });
    // google-auth signs its own JWT with the service account's key (no token round trip for
    // Google's APIs): the bearer token must verify with the public half of the file's key.
    const bearer = authorizations.find((a) => a.startsWith("Bearer ")) ?? "";
    const [head, payload, signature] = bearer.slice("Bearer ".length).split(".");
    const verified = verify("RSA-SHA256", Buffer.from(`${head}.${payload}`), publicKey, Buffer.from(signature ?? "", "base64url"));
    expect(verified).toBe(true);
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString()) as { iss?: string; scope?: string };
    expect(claims.iss).toBe("reader@lakelogic-adc.iam.gserviceaccount.com");
    expect(claims.scope).toContain("https://www.googleapis.com/auth/pubsub");
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/permission denied/);
  });

  it("a GOOGLE_APPLICATION_CREDENTIALS file that is not there fails the receive, naming it", async () => {
    const tls = certificate();
    const grpcServer = createSecureServer({ key: tls.key, cert: tls.cert });
    grpcServer.on("stream", (stream) => stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "7" }, { endStream: true }));
    const grpcPort = await listen(grpcServer);
    const missing = join(dir, "no-such-key.json");
    const r = await runChild(["pubsub", "lakelogic-adc", "orders-sub"], {
      GOOGLE_APPLICATION_CREDENTIALS: missing,
      PUBSUB_TEST_ENDPOINT: `pubsub.googleapis.com:${grpcPort}`,
      GOOGLEAPIS_AT: "127.0.0.1",
      GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: tls.certFile,
      CHILD_RECEIVE_MS: "8000",
    });
    expect(r.ok).toBe(false);
    expect(r.error).toContain(missing);
  });
});
