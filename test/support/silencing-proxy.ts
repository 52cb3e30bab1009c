/**
 * A TCP proxy on loopback in front of a real server, that can go silent: after `silence()` it
 * keeps every connection open (and accepts new ones) but passes nothing either way — a server
 * that stopped answering without closing anything, which only a client-side deadline survives.
 * It can also hold the server's answers: after `hold()` requests still reach the server, but
 * what it answers waits in the proxy until `release()` — so a test can stop a client at the
 * moment the server has answered and the client has not yet heard it.
 */
import { createServer, connect, type Socket } from "node:net";

export interface SilencingProxy {
  /** `http://127.0.0.1:<port>`: the upstream's address as clients should use it. */
  endpoint: string;
  /** Connections the proxy has accepted so far. */
  connections(): number;
  silence(): void;
  /** Keep the server's answers from now on, until `release()`. */
  hold(): void;
  /** Bytes of the server's answers held now. */
  heldBytes(): number;
  /** Pass on what was held (to clients still connected), and everything after it. */
  release(): void;
  stop(): Promise<void>;
}

export async function silencingProxy(upstream: string): Promise<SilencingProxy> {
  const target = new URL(upstream);
  let silent = false;
  let holding = false;
  let accepted = 0;
  const held: Array<{ client: Socket; data: Buffer }> = [];
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => s.destroy());
  };
  const server = createServer((client) => {
    accepted++;
    track(client);
    if (silent) return;
    const origin = connect(Number(target.port), target.hostname);
    track(origin);
    client.on("data", (d) => void (silent || origin.write(d)));
    origin.on("data", (d) => {
      if (silent) return;
      if (holding) held.push({ client, data: d });
      else client.write(d);
    });
    client.on("end", () => silent || origin.end());
    origin.on("end", () => silent || holding || client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no TCP address");
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    connections: () => accepted,
    silence: () => {
      silent = true;
    },
    hold: () => {
      holding = true;
    },
    heldBytes: () => held.reduce((n, h) => n + h.data.length, 0),
    release: () => {
      holding = false;
      for (const { client, data } of held.splice(0)) if (!client.destroyed) client.write(data);
    },
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
