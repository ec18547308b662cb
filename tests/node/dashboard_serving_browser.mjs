// Drives the dashboard's Serving panel (src/node/dashboard_page.cc) in
// headless Debian chromium with playwright-core, for
// tests/node/dashboard_browser_test.cc (DashboardBrowserTest.ServingPanel).
//
//   node dashboard_serving_browser.mjs --modules DIR/node_modules --url http://127.0.0.1:P/
//        --out ARTIFACT_DIR [--timeout-ms 60000] [--chromium /usr/bin/chromium]
//
// Opens the page, waits until the Serving panel is shown with status "ok",
// a live request whose generated count moves and tokens/s above 0, saves
// ARTIFACT_DIR/dashboard-serving.png, prints "RESULT {json}" and exits 0;
// any failure exits 1 with "FAIL ...".
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
const timeout = Number(arg('timeout-ms', '60000'))
const chromiumPath = arg('chromium', '/usr/bin/chromium')

const require = createRequire(import.meta.url)
const { chromium } = require(path.join(modules, 'playwright-core'))

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenzro-chromium-'))
let context = null

async function panel(page) {
  return page.evaluate(() => ({
    hidden: document.querySelector('#serving').hidden,
    model: document.querySelector('#serving-model').textContent,
    status: document.querySelector('#serving-status').textContent,
    tps: Number(document.querySelector('#serving-tps').textContent),
    load: document.querySelector('#serving-load').textContent,
    requests: [...document.querySelectorAll('#serving-requests tr.live-request')].map(tr =>
        [...tr.querySelectorAll('td')].map(td => td.textContent)),
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
  const live = () => {
    const rows = document.querySelectorAll('#serving-requests tr.live-request')
    return !document.querySelector('#serving').hidden &&
        document.querySelector('#serving-status').textContent === 'ok' && rows.length > 0 &&
        Number(rows[0].querySelectorAll('td')[3].textContent) > 0 &&
        Number(document.querySelector('#serving-tps').textContent) > 0
  }
  await page.waitForFunction(live, null, { timeout, polling: 100 }).catch(async e => {
    throw new Error(e.message + '; panel: ' + JSON.stringify(await panel(page)))
  })
  const first = await panel(page)
  // The page redraws each second: the request has generated more (or the
  // test's next stream replaced it).
  await page.waitForFunction(([id, n]) => {
    const rows = document.querySelectorAll('#serving-requests tr.live-request')
    if (rows.length === 0) return false
    const td = rows[0].querySelectorAll('td')
    return td[0].textContent !== id || Number(td[3].textContent) > n
  }, [first.requests[0][0], Number(first.requests[0][3])], { timeout, polling: 100 })
  const second = await panel(page)
  const shot = path.join(out, 'dashboard-serving.png')
  await page.screenshot({ path: shot, fullPage: true })
  console.log('SCREENSHOT ' + shot)
  console.log('RESULT ' + JSON.stringify({ first, second, page_errors: errors }))
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
