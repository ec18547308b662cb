// A real iroh 0.35 node with iroh-blobs (@number0/iroh@0.35.0) for the QUIC
// interop test (tests/quic/interop_test.cc). Run only inside a network
// namespace that has loopback only; no discovery, bound to 127.0.0.1.
//
//   node blobs_peer.mjs provide OUR_NODE_HEX OUR_IP:PORT SIZE...
//       adds one blob per SIZE (byte i = floor(i*7919/8) mod 256), tells the
//       node our address (it drops packets from unknown addresses otherwise),
//       prints {"ready":true,"node_id":HEX,"addr":IP:PORT,"blobs":[{"size","hash"}]}
//       and serves until killed.
//   node blobs_peer.mjs get PROVIDER_HEX IP:PORT HASH_HEX
//       downloads the blob from that provider (verified by iroh), prints
//       {"ok":true,"size":N,"head_hex":..} or {"ok":false,"error":..}.
// IROH_NODE_MODULES names the node_modules folder holding the package.
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)
const { Iroh, Hash, PublicKey, BlobDownloadOptions, SetTagOption } =
  require(path.join(process.env.IROH_NODE_MODULES, '@number0/iroh'))

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const hex = (a) => Buffer.from(a).toString('hex')
const nodeIdOf = (h) => PublicKey.fromBytes(Array.from(Buffer.from(h, 'hex'))).toString()

function pattern(n) {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = Math.floor((i * 7919) / 8) & 0xff
  return b
}

async function start() {
  return await Iroh.memory({ ipv4Addr: '127.0.0.1:0', ipv6Addr: '[::1]:0', nodeDiscovery: 'None' })
}

async function provide(ourHex, ourAddr, sizes) {
  const node = await start()
  const blobs = []
  for (const s of sizes) {
    const res = await node.blobs.addBytes(Array.from(pattern(Number(s))))
    blobs.push({ size: Number(s), hash: Hash.fromString(res.hash).toString('hex') })
  }
  await node.net.addNodeAddr({ nodeId: nodeIdOf(ourHex), addresses: [ourAddr] })
  const addr = await node.net.nodeAddr()
  const v4 = (addr.addresses || []).find((a) => a.startsWith('127.0.0.1:'))
  const idHex = hex(PublicKey.fromString(await node.net.nodeId()).toBytes())
  out({ ready: true, node_id: idHex, addr: v4, blobs })
  setInterval(() => {}, 1000)
}

async function get(providerHex, addr, hashHex) {
  const node = await start()
  try {
    const hash = Hash.fromBytes(Array.from(Buffer.from(hashHex, 'hex'))).toString()
    const opts = new BlobDownloadOptions('Raw', [{ nodeId: nodeIdOf(providerHex), addresses: [addr] }],
                                         SetTagOption.auto())
    await new Promise((resolve, reject) => {
      node.blobs.download(hash, opts, (err, ev) => {
        if (err != null) return reject(err)
        if (ev.allDone != null) resolve(ev)
      }).catch(reject)
    })
    const bytes = await node.blobs.readToBytes(hash)
    out({ ok: true, size: bytes.length, head_hex: hex(bytes.slice(0, 16)) })
  } catch (e) {
    out({ ok: false, error: String(e) })
  }
  await node.node.shutdown()
}

const [mode, ...args] = process.argv.slice(2)
const timer = setTimeout(() => { out({ ok: false, error: 'timeout' }); process.exit(3) }, 120000)
if (mode === 'provide') await provide(args[0], args[1], args.slice(2))
else if (mode === 'get') { await get(...args); clearTimeout(timer); process.exit(0) }
else { out({ ok: false, error: 'usage' }); process.exit(2) }
