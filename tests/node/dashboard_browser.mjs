// Drives the node dashboard (src/node/dashboard.h) in headless Debian
// chromium with playwright-core, for tests/node/dashboard_browser_test.cc.
//
//   node dashboard_browser.mjs --modules DIR/node_modules --url http://127.0.0.1:P/
//        --out ARTIFACT_DIR --marker FILE --holders 3 [--timeout-ms 60000]
//        [--chromium /usr/bin/chromium]
//
// 1. opens the page, waits until it lists --holders holders and draws the
//    heatmap, saves ARTIFACT_DIR/dashboard.png, prints "READY";
// 2. waits (same page, no reload) for FILE to appear (the test writes the
//    killed holder's node id into it after SIGKILLing that holder), then
//    until the page lists one holder fewer and not that node, saves
//    ARTIFACT_DIR/dashboard-after-kill.png;
// 3. prints "RESULT {json}" and exits 0; any failure exits 1 with "FAIL ...".
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

function arg(name, def) {
  const i = process.argv.indexOf('--' + name)
  if (i < 0 || i + 1 >= process.argv.length) {
    if (def === undefined) throw new Error('missing --' + name)
    return def
  }
  return process.argv[i + 1]
}

const modules = arg('modules')
const url = arg('url')
const out = arg('out')
const marker = arg('marker')
const holders = Number(arg('holders'))
const timeout = Number(arg('timeout-ms', '60000'))
const chromiumPath = arg('chromium', '/usr/bin/chromium')

const require = createRequire(import.meta.url)
const { chromium } = require(path.join(modules, 'playwright-core'))

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenzro-chromium-'))
let context = null

async function pageState(page) {
  return page.evaluate(() => ({
    holderCount: Number(document.querySelector('#holder-count').textContent),
    holderIds: [...document.querySelectorAll('#holders tr.holder')].map(tr => tr.dataset.nodeId),
    cells: document.querySelectorAll('#heatmap-svg rect.cell').length,
    uncovered: document.querySelectorAll('#heatmap-svg text.uncovered').length,
    replicas: [...document.querySelectorAll('#heatmap-svg rect.cell')].map(r => Number(r.dataset.replicas)),
    experts: document.querySelectorAll('#experts tbody tr').length,
    status: document.querySelector('#status').textContent,
  }))
}

async function main() {
  fs.mkdirSync(out, { recursive: true })
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  })
  const page = context.pages()[0] || await context.newPage()
  const errors = []
  page.on('pageerror', e => errors.push(String(e)))
  await page.goto(url, { timeout })
  await page.waitForFunction(n => {
    const c = document.querySelector('#holder-count')
    return c && Number(c.textContent) === n && document.querySelectorAll('#holders tr.holder').length === n &&
        document.querySelectorAll('#heatmap-svg rect.cell').length > 0
  }, holders, { timeout, polling: 100 })
  const before = await pageState(page)
  const shot1 = path.join(out, 'dashboard.png')
  await page.screenshot({ path: shot1, fullPage: true })
  console.log('SCREENSHOT ' + shot1)
  console.log('READY')

  const deadline = Date.now() + timeout
  while (!fs.existsSync(marker)) {
    if (Date.now() > deadline) throw new Error('the test never wrote ' + marker)
    await new Promise(r => setTimeout(r, 50))
  }
  const killed = fs.readFileSync(marker, 'utf8').trim()
  await page.waitForFunction(([n, id]) => {
    const rows = [...document.querySelectorAll('#holders tr.holder')]
    return Number(document.querySelector('#holder-count').textContent) === n && rows.length === n &&
        !rows.some(tr => tr.dataset.nodeId === id)
  }, [holders - 1, killed], { timeout, polling: 100 })
  const after = await pageState(page)
  const shot2 = path.join(out, 'dashboard-after-kill.png')
  await page.screenshot({ path: shot2, fullPage: true })
  console.log('SCREENSHOT ' + shot2)
  console.log('RESULT ' + JSON.stringify({ before, after, killed, page_errors: errors }))
}

let code = 0
try {
  await main()
} catch (e) {
  console.log('FAIL ' + (e && e.stack ? e.stack : e))
  code = 1
} finally {
  if (context) await context.close().catch(() => {})
  fs.rmSync(userDataDir, { recursive: true, force: true })
}
process.exit(code)
