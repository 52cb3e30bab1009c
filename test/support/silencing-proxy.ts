/**
 * A TCP proxy on loopback in front of a real server, that can go silent: after `silence()` it
 * keeps every connection open (and accepts new ones) but passes nothing either way — a server
 * that stopped answering without closing anything, which only a client-side deadline survives.
 */
import { createServer, connect, type Socket } from "node:net";

export interface SilencingProxy {
  /** `http://127.0.0.1:<port>`: the upstream's address as clients should use it. */
  endpoint: string;
  /** Connections the proxy has accepted so far. */
  connections(): number;
  silence(): void;
  stop(): Promise<void>;
}

export async function silencingProxy(upstream: string): Promise<SilencingProxy> {
  const target = new URL(upstream);
  let silent = false;
  let accepted = 0;
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
    origin.on("data", (d) => void (silent || client.write(d)));
    client.on("end", () => silent || origin.end());
    origin.on("end", () => silent || client.end());
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
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
