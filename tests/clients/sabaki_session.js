#!/usr/bin/env node
// A Sabaki session against a GTP engine, driven through Sabaki's own GTP library
// (@sabaki/gtp: Controller, StreamController, ControllerStateTracker), doing what Sabaki's
// EngineSyncer (src/modules/enginesyncer.js) does with them:
//   - the start-up burst on 'started': name, version, protocol_version, list_commands and the
//     user's initial commands split on ';' (empty pieces dropped), none with an id, unawaited;
//   - analysis and genmove command detection from list_commands;
//   - board sync through ControllerStateTracker.sync (pipelined komi/boardsize/clear_board/
//     set_free_handicap/play, and undo x k plus plays for a shared prefix);
//   - `lz-analyze B 50` and its info lines, aborted by `protocol_version` (sendAbort);
//   - `lz-genmove_analyze W 50`, the move taken from the `play` line before the reply ends;
//   - stop(): quit, kill after 3000 ms.
// @sabaki/gtp does not export Sabaki's analysis parser (it lives in the app's
// enginesyncer.js / analysis.js), so `parseAnalysis` below follows that parser's rules.
//
// usage: node sabaki_session.js ENGINE [ARGS...]
// Prints one JSON object: {checks: [{name, ok, detail}], ...}; exit status 1 if any failed.

'use strict'

const {Controller, ControllerStateTracker, Command} = require('@sabaki/gtp')

const ANALYZE_COMMANDS = ['analyze', 'kata-analyze', 'lz-analyze'] // Sabaki's setting order
const GENMOVE_ANALYZE_COMMANDS = [
  'genmove_analyze',
  'kata-genmove_analyze',
  'lz-genmove_analyze'
]
const INITIAL_COMMANDS = 'komi 7.5;time_settings 0 1 1;' // trailing ';' as in Sabaki#400
const ABORT_LIMIT_MS = 200
const QUIT_TIMEOUT_MS = 3000 // gtp.engine_quit_timeout
const ALPHA = 'ABCDEFGHJKLMNOPQRST'

const checks = []
const info = {}
const stderrTail = [] // the engine's stderr, shown when the session breaks

function check(name, ok, detail = '') {
  checks.push({name, ok: !!ok, detail: typeof detail === 'string' ? detail : JSON.stringify(detail)})
  return !!ok
}

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms))
}

function withTimeout(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

// ---- Sabaki's analysis parser, by its rules ------------------------------------------------
// The line is cut at every `info`; in each piece the PV is the trailing run of vertex-like
// tokens (`pass` or letter+digits), cut at the first `pass`, and everything before the
// token `pv` is read as key/value pairs. Pieces whose `move` is not letter+digits (pass) are
// dropped. Winrate: v0.52 reads a value with a '.' as a fraction, else as 1/10000 (integer);
// v0.60 decides by the command name (kata-* fraction, lz-analyze integer). Both are applied
// and must agree for lz-analyze.
function parseVertex(text) {
  let x = ALPHA.indexOf(text[0].toUpperCase())
  let y = 19 - +text.slice(1)
  return x >= 0 && y >= 0 && y < 19 && /^[A-Za-z]\d+$/.test(text) ? [x, y] : [-1, -1]
}

function parseAnalysis(line, commandName) {
  return line
    .split(/\s*info\s+/)
    .slice(1)
    .map(piece => piece.trim())
    .map(piece => {
      let pvMatch = piece.match(/(pass|[A-Za-z]\d+)(\s+(pass|[A-Za-z]\d+))*$/)
      if (pvMatch == null) return null
      let cut = pvMatch[0].indexOf('pass')
      let pv = pvMatch[0]
        .slice(0, cut < 0 ? undefined : cut)
        .split(/\s+/)
        .filter(t => t.length >= 2)
      let tokens = piece.slice(0, pvMatch.index).trim().split(/\s+/).slice(0, -1) // drop 'pv'
      let fields = {pv}
      for (let i = 0; i + 1 < tokens.length; i += 2) fields[tokens[i]] = tokens[i + 1]
      return fields
    })
    .filter(f => f != null && f.move != null && /^[A-Za-z]\d+$/.test(f.move))
    .map(f => {
      let v052 = f.winrate.includes('.') ? +f.winrate * 100 : +f.winrate / 100
      let v060 = /^kata-/.test(commandName) ? +f.winrate * 100 : +f.winrate / 100
      return {
        move: f.move,
        vertex: parseVertex(f.move),
        visits: +f.visits,
        winrate: v052,
        winrateV060: v060,
        scoreLead: f.scoreLead != null ? +f.scoreLead : null,
        moves: f.pv.map(parseVertex),
        raw: f
      }
    })
}

function validVariations(variations) {
  return (
    variations.length > 0 &&
    variations.every(
      v =>
        v.vertex[0] >= 0 &&
        Number.isInteger(v.visits) &&
        v.visits > 0 &&
        v.winrate >= 0 &&
        v.winrate <= 100 &&
        v.winrate === v.winrateV060 &&
        v.moves.length >= 1 &&
        v.moves[0][0] === v.vertex[0] &&
        v.moves[0][1] === v.vertex[1] &&
        v.moves.every(m => m[0] >= 0)
    )
  )
}

// ---- the session --------------------------------------------------------------------------

async function moveHistory(controller) {
  // LZ's move_history: most recent first, "black Q4" per line
  let res = await controller.sendCommand({name: 'move_history'})
  return res.content
    .split('\n')
    .map(x => x.trim())
    .filter(x => x !== '')
    .map(x => x.split(/\s+/))
    .map(([color, vertex]) => [color[0].toUpperCase(), vertex.toUpperCase()])
    .reverse()
}

function expectedHistory(history) {
  let out = []
  for (let cmd of history) {
    if (cmd.name === 'play') out.push([cmd.args[0], cmd.args[1].toUpperCase()])
    else if (cmd.name === 'set_free_handicap')
      for (let v of cmd.args) out.push(['B', v.toUpperCase()])
  }
  return out
}

function play(color, vertex) {
  return {name: 'play', args: [color, vertex]}
}

// Sabaki's sendAbort while analysing: protocol_version, answered once the analysis reply has
// ended; returns the milliseconds from sending it to its reply.
async function abort(controller, analysis, analysisEndedAt) {
  let sentAt = Date.now()
  let reply = await withTimeout(controller.sendCommand({name: 'protocol_version'}), 10000,
    'abort')
  let ms = Date.now() - sentAt
  await withTimeout(analysis, 10000, 'analysis end')
  let ended = analysisEndedAt()
  check('abort: analysis reply ended, then protocol_version answered 2',
    reply.content === '2' && !reply.error && ended !== null, {reply, ended})
  return ms
}

async function main() {
  let [path, ...args] = process.argv.slice(2)
  let controller = new Controller(path, args)
  let tracker = new ControllerStateTracker(controller)
  let stderrLines = []
  controller.on('stderr', ({content}) => {
    stderrLines.push(content)
    stderrTail.push(content)
  })

  // Sabaki's quirk: every command with arguments gets the analysis subscriber, so a stray
  // `info` line on stdout during any such command would become analysis.
  let strayInfo = []
  controller.on('command-sent', ({command, subscribe}) => {
    if (command.args.length > 0 && !/analyze$/.test(command.name)) {
      subscribe(({line}) => {
        if (line.startsWith('info ')) strayInfo.push(`${command.name}: ${line}`)
      })
    }
  })

  // 1. start-up burst, as EngineSyncer's 'started' handler
  let startup = null
  controller.on('started', () => {
    startup = Promise.all([
      controller.sendCommand({name: 'name'}),
      controller.sendCommand({name: 'version'}),
      controller.sendCommand({name: 'protocol_version'}),
      controller.sendCommand({name: 'list_commands'}),
      ...INITIAL_COMMANDS.split(';')
        .filter(x => x.trim() !== '')
        .map(x => controller.sendCommand(Command.fromString(x)))
    ])
  })
  let t0 = Date.now()
  controller.start()
  let [name, version, protocol, list, ...initial] = await withTimeout(startup, 60000, 'start-up')
  info.startup_ms = Date.now() - t0
  check('name is Leela Zero', name.content === 'Leela Zero' && !name.error, name)
  check('version 0.NN with NN >= 16', /^0\.(\d+)$/.test(version.content) &&
    +version.content.split('.')[1] >= 16, version)
  check('protocol_version 2', protocol.content === '2', protocol)
  check('replies to id-less commands carry no id',
    [name, version, protocol, list, ...initial].every(r => r.id === null && !r.error))
  let commands = list.content.split('\n')
  let analyzeCommand = ANALYZE_COMMANDS.find(x => commands.includes(x))
  let genmoveCommand = GENMOVE_ANALYZE_COMMANDS.find(x => commands.includes(x))
  check('Sabaki picks lz-analyze', analyzeCommand === 'lz-analyze', String(analyzeCommand))
  check('Sabaki picks lz-genmove_analyze', genmoveCommand === 'lz-genmove_analyze',
    String(genmoveCommand))
  check('tracker learned the command list', await tracker.knowsCommand('undo'))

  // 2. board sync: pipelined plays, then a variation sharing a prefix (undo x k + plays),
  // then setup stones of one colour in a row, then a handicap game (clear_board +
  // set_free_handicap + plays)
  let sent = []
  let logSent = ({command}) => sent.push(Command.toString(command))
  controller.on('command-sent', logSent)
  let game = [play('B', 'Q16'), play('W', 'D4'), play('B', 'Q3'), play('W', 'C16'),
    play('B', 'R5'), play('W', 'E17'), play('B', 'C6')]
  await tracker.sync({komi: 6.5, boardsize: [19, 19], history: game})
  check('first sync: komi, boardsize, clear_board, 7 plays',
    sent.join('|') === ['komi 6.5', 'boardsize 19', 'clear_board',
      ...game.map(c => Command.toString(c))].join('|'), sent)
  let history = await moveHistory(controller)
  check('engine history after first sync', JSON.stringify(history) ===
    JSON.stringify(expectedHistory(game)), history)

  sent.length = 0
  let variation = [...game.slice(0, 4), play('B', 'D17'), play('W', 'C17'), play('B', 'R14')]
  await tracker.sync({komi: 6.5, boardsize: [19, 19], history: variation})
  check('variation sync: undo x3 then 3 plays',
    sent.join('|') === ['undo', 'undo', 'undo', 'play B D17', 'play W C17', 'play B R14'].join('|'),
    sent)
  history = await moveHistory(controller)
  check('engine history after undo sync', JSON.stringify(history) ===
    JSON.stringify(expectedHistory(variation)), history)

  sent.length = 0
  let setup = [...variation, play('B', 'K10'), play('B', 'K4'), play('W', 'K16')]
  await tracker.sync({komi: 6.5, boardsize: [19, 19], history: setup})
  let setupSent = [...sent]
  history = await moveHistory(controller)
  check('non-alternating plays accepted', setupSent.length === 3 && JSON.stringify(history) ===
    JSON.stringify(expectedHistory(setup)), {setupSent, history})

  sent.length = 0
  let handicap = [{name: 'set_free_handicap', args: ['D16', 'Q16', 'Q4']}, play('W', 'D4'),
    play('B', 'C3'), play('W', 'D3')]
  await tracker.sync({komi: 0.5, boardsize: [19, 19], history: handicap})
  check('handicap sync: komi, clear_board, set_free_handicap, plays',
    sent.join('|') === ['komi 0.5', 'clear_board', 'set_free_handicap D16 Q16 Q4', 'play W D4',
      'play B C3', 'play W D3'].join('|'), sent)
  history = await moveHistory(controller)
  check('engine history after handicap sync', JSON.stringify(history) ===
    JSON.stringify(expectedHistory(handicap)), history)
  controller.removeListener('command-sent', logSent)

  // 3. lz-analyze B 50, parsed as Sabaki does, aborted with protocol_version
  let lines = []
  let variationsSeen = []
  let badLines = []
  let analyzeStart = Date.now()
  let firstInfoMs = null
  let analysisDone = null
  let analysis = tracker.queueCommand({name: analyzeCommand, args: ['B', '50']}, ({line}) => {
    lines.push(line)
    if (line.startsWith('info ')) {
      if (firstInfoMs === null) firstInfoMs = Date.now() - analyzeStart
      let variations = parseAnalysis(line, analyzeCommand)
      if (validVariations(variations)) variationsSeen.push(variations)
      else badLines.push(line)
    }
  }).then(res => ((analysisDone = Date.now()), res))
  let deadline = Date.now() + 20000
  while (variationsSeen.length < 3 && Date.now() < deadline) await sleep(20)
  info.first_info_ms = firstInfoMs
  check('lz-analyze: info lines that Sabaki turns into moves', variationsSeen.length >= 3 &&
    badLines.length === 0, {seen: variationsSeen.length, badLines: badLines.slice(0, 3)})
  let last = variationsSeen[variationsSeen.length - 1] || []
  info.last_analysis = last.slice(0, 3).map(({move, visits, winrate}) => ({move, visits, winrate}))
  check('lz-analyze: visits grow', variationsSeen.length >= 2 &&
    last.reduce((a, v) => a + v.visits, 0) >
      variationsSeen[0].reduce((a, v) => a + v.visits, 0), info.last_analysis)
  check('lz-analyze: reply head is "=" alone', lines[0] === '=', lines[0])
  let abortMs = [await abort(controller, analysis, () => analysisDone)]
  // two more analyses, each stopped the same way after its first info line: Sabaki stops
  // and restarts analysis on every board change
  for (let round = 0; round < 2; round++) {
    let seen = 0
    analysisDone = null
    let again = tracker.queueCommand({name: analyzeCommand, args: ['B', '50']}, ({line}) => {
      if (line.startsWith('info ') && validVariations(parseAnalysis(line, analyzeCommand))) seen++
    }).then(res => ((analysisDone = Date.now()), res))
    deadline = Date.now() + 20000
    while (seen < 1 && Date.now() < deadline) await sleep(20)
    abortMs.push(await abort(controller, again, () => analysisDone))
  }
  info.abort_ms = abortMs
  // The target is 200 ms; the best of three is checked, so that one stall of a loaded
  // machine does not decide, and every abort must be answered within a second.
  check(`abort by protocol_version answered within ${ABORT_LIMIT_MS} ms (best of 3)`,
    Math.min(...abortMs) < ABORT_LIMIT_MS && Math.max(...abortMs) < 1000, abortMs)

  // 4. lz-genmove_analyze W 50: the move from the play line, as the tracker reads it
  await tracker.sync({komi: 0.5, boardsize: [19, 19], history: [...handicap, play('B', 'R10')]})
  let genLines = []
  let playAt = null
  let genStart = Date.now()
  let genmove = tracker.queueCommand({name: genmoveCommand, args: ['W', '50']}, ({line}) => {
    genLines.push(line)
    if (line.startsWith('play ') && playAt === null) playAt = Date.now() - genStart
  })
  deadline = Date.now() + 30000
  while (playAt === null && Date.now() < deadline) await sleep(20)
  info.genmove_play_ms = playAt
  let playLine = genLines.find(x => x.startsWith('play '))
  let vertex = playLine ? playLine.slice(5).trim() : null
  check('lz-genmove_analyze delivers a play line', playLine != null &&
    /^([A-HJ-T](1[0-9]|[1-9])|pass|resign)$/i.test(vertex), genLines.slice(-3))
  let genInfos = genLines.filter(x => x.startsWith('info '))
  check('lz-genmove_analyze: info lines before play parse', genInfos.length >= 1 &&
    genInfos.every(x => validVariations(parseAnalysis(x, genmoveCommand))), genInfos.length)
  await sleep(50) // the tracker records the move from the play line
  let tracked = tracker.state.history[tracker.state.history.length - 1]
  check('tracker recorded the engine move from the play line before the reply ended',
    tracked && tracked.name === 'play' && tracked.args[0] === 'W' &&
    tracked.args[1] === String(vertex).toUpperCase(), tracked)
  // Sabaki then syncs the next position: sendAbort first (the controller is busy)
  let next = [...tracker.state.history, play('B', 'S2')]
  if (controller.busy) controller.sendCommand({name: 'protocol_version'})
  await withTimeout(tracker.sync({komi: 0.5, boardsize: [19, 19], history: next}), 10000,
    'sync after genmove')
  await withTimeout(genmove, 10000, 'genmove end')
  history = await moveHistory(controller)
  check('engine history after genmove and sync', JSON.stringify(history) ===
    JSON.stringify(expectedHistory(next)), history)

  check('no stray info lines in replies to other commands', strayInfo.length === 0,
    strayInfo.slice(0, 3))

  // 5. stop: quit answered and the process gone before the 3 s kill
  let stopAt = Date.now()
  let quitReply = null
  controller.once('response-received', ({command, response}) => {
    if (command.name === 'quit') quitReply = response
  })
  let stopped = new Promise(resolve => controller.once('stopped', resolve))
  await controller.stop(QUIT_TIMEOUT_MS)
  let {signal} = await stopped
  info.quit_ms = Date.now() - stopAt
  check('quit: exited by itself within 3 s', signal === 0 && info.quit_ms < QUIT_TIMEOUT_MS,
    {signal, quitMs: info.quit_ms, quitReply})
  info.stderr_lines = stderrLines.length
}

main()
  .catch(err => {
    check('session ran to the end', false, String(err && err.stack || err))
    info.stderr_tail = stderrTail.slice(-30)
  })
  .finally(() => {
    let ok = checks.length > 0 && checks.every(c => c.ok)
    process.stdout.write(JSON.stringify({ok, checks, info}, null, 1) + '\n')
    process.exit(ok ? 0 : 1)
  })
