// A real iroh 1.x endpoint (@number0/iroh@1.1.0) for the QUIC interop test
// (tests/quic/interop_test.cc). Run only inside a network namespace that has
// loopback only; minimal preset (no relays, no discovery), bound to 127.0.0.1.
//
//   node endpoint_peer.mjs serve ALPN
//       prints {"ready":true,"node_id":HEX,"addr":"127.0.0.1:PORT"}; answers
//       every bidirectional stream with "iroh-echo:" + request; runs until killed.
//   node endpoint_peer.mjs dial NODE_ID_HEX IP:PORT ALPN MESSAGE_HEX
//       opens a stream, sends MESSAGE, finishes, prints
//       {"ok":true,"reply_hex":..,"remote_id":HEX} or {"ok":false,"error":..}.
// IROH_NODE_MODULES names the node_modules folder holding the package.
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)
const { Endpoint, EndpointAddr, EndpointId, RelayMode, presetMinimal } =
  require(path.join(process.env.IROH_NODE_MODULES, '@number0/iroh'))

const toBytes = (s) => Array.from(Buffer.from(s, 'utf8'))
const hex = (a) => Buffer.from(a).toString('hex')
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')

async function bind(alpns) {
  const b = Endpoint.builder()
  presetMinimal(b)
  b.relayMode(RelayMode.disabled())
  b.bindAddr('127.0.0.1:0')
  if (alpns) b.alpns(alpns)
  return await b.bind()
}

async function serve(alpn) {
  const ep = await bind([toBytes(alpn)])
  const v4 = ep.boundSockets().find((a) => a.startsWith('127.0.0.1:'))
  out({ ready: true, node_id: hex(ep.id().toBytes()), addr: v4 })
  for (;;) {
    const incoming = await ep.acceptNext()
    if (!incoming) break
    ;(async () => {
      try {
        const conn = await (await incoming.accept()).connect()
        out({ accepted: true, peer: hex(conn.remoteId().toBytes()), alpn: Buffer.from(conn.alpn()).toString() })
        for (;;) {
          const bi = await conn.acceptBi()
          const msg = await bi.recv.readToEnd(1 << 20)
          await bi.send.writeAll(toBytes('iroh-echo:').concat(msg))
          await bi.send.finish()
        }
      } catch (e) {
        out({ connection_ended: String(e) })
      }
    })()
  }
}

async function dial(nodeHex, addr, alpn, msgHex) {
  const ep = await bind(null)
  try {
    const id = EndpointId.fromBytes(Array.from(Buffer.from(nodeHex, 'hex')))
    const conn = await ep.connect(new EndpointAddr(id, null, [addr]), toBytes(alpn))
    const bi = await conn.openBi()
    await bi.send.writeAll(Array.from(Buffer.from(msgHex, 'hex')))
    await bi.send.finish()
    const reply = await bi.recv.readToEnd(1 << 20)
    out({ ok: true, reply_hex: hex(reply), remote_id: hex(conn.remoteId().toBytes()) })
    conn.close(0n, toBytes('done'))
  } catch (e) {
    out({ ok: false, error: String(e) })
  }
  await ep.close()
}

const [mode, ...args] = process.argv.slice(2)
const timer = setTimeout(() => { out({ ok: false, error: 'timeout' }); process.exit(3) }, 60000)
if (mode === 'serve') await serve(args[0])
else if (mode === 'dial') { await dial(...args); clearTimeout(timer); process.exit(0) }
else { out({ ok: false, error: 'usage' }); process.exit(2) }
