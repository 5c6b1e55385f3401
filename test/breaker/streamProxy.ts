import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedResponse {
  path: string;
  bytes: number;
  /** The client went away before the upstream response ended: the stream was cut by the client. */
  clientClosedEarly: boolean;
  upstreamEnded: boolean;
}

/**
 * A real HTTP hop between the worker and the model server that watches each response: it is how a test sees
 * whether the client cancelled a stream (closed its connection) before the model finished sending.
 */
export async function startStreamProxy(target: string) {
  const responses: ProxiedResponse[] = [];
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const seen: ProxiedResponse = {
      path: req.url ?? '',
      bytes: 0,
      clientClosedEarly: false,
      upstreamEnded: false,
    };
    responses.push(seen);
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.on('data', (chunk: Buffer) => {
          seen.bytes += chunk.length;
          res.write(chunk);
        });
        up.on('end', () => {
          seen.upstreamEnded = true;
          res.end();
        });
      },
    );
    res.on('close', () => {
      if (!seen.upstreamEnded) {
        seen.clientClosedEarly = true;
        out.destroy();
      }
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    responses,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
