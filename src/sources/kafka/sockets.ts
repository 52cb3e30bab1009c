import { connect as netConnect, isIP, Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
// Types only: kafkajs is an optional peer dependency, loaded at run time through requirePeer.
import type { ISocketFactory } from "kafkajs";

/** What kafkajs reports for a connection closed by `destroy()`: expected, so logged at debug level. */
export const FORCED_CLOSE = "closed by force: the Kafka source was closed";

/** kafkajs's own keep-alive delay. */
const KEEP_ALIVE_MS = 60_000;

/**
 * The sockets one kafkajs client opens, so that closing the client closes every one of them.
 * kafkajs's `disconnect()` closes the connections its broker pool knows of, but after a broker
 * restart the consumer group can still hold the coordinator's old broker object, which the pool
 * no longer lists: a heartbeat during shutdown reopens a connection through it, nothing ever
 * closes it, and it keeps the process alive until the broker drops it as idle (10 minutes by
 * default), while that connection's request queue re-arms a 1 ms timer. After `destroy()` the
 * client gets no new socket either (the attempt fails at once).
 */
export class ClientSockets {
  private readonly open = new Set<Socket>();
  private closed = false;

  /** kafkajs's socket factory (plain TCP, or TLS with the client's `ssl`), counting what it opens. */
  readonly factory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
    if (this.closed) return refused(host, port);
    // As kafkajs's default factory: `ssl` is `true` or Node TLS options.
    const socket = ssl
      ? tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...(typeof ssl === "object" ? ssl : {}) }, onConnect)
      : netConnect({ host, port }, onConnect);
    socket.setKeepAlive(true, KEEP_ALIVE_MS);
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
    return socket;
  };

  /** Close every socket still open, by force, and refuse new ones. Returns how many were open. */
  destroy(): number {
    this.closed = true;
    const n = this.open.size;
    // With an error: kafkajs listens for errors, not for `close`, and only on an error does it
    // stop the connection's request queue, whose timer would otherwise keep firing.
    for (const socket of this.open) socket.destroy(new Error(FORCED_CLOSE));
    this.open.clear();
    return n;
  }
}

/** A socket that fails as soon as kafkajs listens to it: the client was closed. */
function refused(host: string, port: number): Socket {
  const socket = new Socket();
  process.nextTick(() => socket.destroy(new Error(`connection to ${host}:${port} refused: this Kafka client is closed`)));
  return socket;
}
