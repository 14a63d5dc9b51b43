// Reads an SGF file with Sabaki's own parser (@sabaki/sgf, what Sabaki opens files with) and
// prints what Sabaki would see as JSON: the number of games, the main line's nodes (their
// properties) and, for each main-line node with variations, its depth and children count.
// Used by tests/test_review.py.
const fs = require('fs')
const sgf = require('@sabaki/sgf')

const roots = sgf.parse(fs.readFileSync(process.argv[2], 'utf8'))
const mainline = []
const branches = []
let node = roots[0]
while (node != null) {
  if (node.children.length > 1) {
    branches.push({
      depth: mainline.length,
      children: node.children.map(child => child.data)
    })
  }
  mainline.push(node.data)
  node = node.children[0]
}
process.stdout.write(JSON.stringify({games: roots.length, mainline, branches}) + '\n')
