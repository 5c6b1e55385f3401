// The selected step: fork command and Temporal link, the conversation as chat messages with the answer's
// stream playback, the tool call and result, the effects (staged file diffs, SQL, MCP, shell, commit,
// rollback, breaker), the attempts and the raw frames.
import { h, money, ms, text } from './dom.mjs';
import { playback } from './playback.mjs';

export function stepPanel(d, run) {
  const r = d.row;
  return h(
    'div.step-detail',
    { 'data-i': r.i, 'data-step': r.step },
    h(
      'h2',
      `Step ${r.step} · `,
      h(`span.kind.${r.kind}`, r.kind),
      ' ',
      r.label,
      ' ',
      h(`span.badge.${r.status}`, r.status),
    ),
    h(
      'p.facts',
      `${ms(r.endUs - r.startUs)} · frames ${r.frames[0]}–${r.frames[r.frames.length - 1]}`,
      r.tokens ? ` · ${r.tokens.input} in / ${r.tokens.output} out tokens` : '',
      r.cost !== null ? ` · ${money(r.cost)}` : '',
      r.attempts > 1 ? ` · ${r.attempts} attempts` : '',
      r.activityId ? ` · activity ${r.activityId}` : '',
    ),
    actions(d),
    r.error ? h('div.error-box', h('strong', 'Error: '), r.error) : null,
    d.llm ? llmSection(d.llm) : null,
    d.tool ? toolSection(d.tool) : null,
    d.effects.length
      ? h('section.effects', h('h3', `Effects and decisions (${d.effects.length})`), d.effects.map(effect))
      : null,
    d.input !== undefined ? h('details.json', h('summary', 'Activity input'), h('pre', text(d.input))) : null,
    d.result !== undefined
      ? h('details.json', h('summary', 'Activity result'), h('pre', text(d.result)))
      : null,
    d.attempts.length
      ? h(
          'section.attempts',
          h('h3', 'Attempts'),
          h(
            'table',
            h('tr', h('th', '#'), h('th', 'took'), h('th', 'status'), h('th', 'error')),
            d.attempts.map((a) =>
              h(
                'tr',
                h('td', a.attempt),
                h('td', ms(a.endUs - a.startUs)),
                h('td', h(`span.badge.${a.status}`, a.status)),
                h('td', a.error ? text(a.error.message ?? a.error) : ''),
              ),
            ),
          ),
        )
      : null,
    h(
      'details.frames',
      h('summary', `Frames (${d.frames.length})`),
      h(
        'table',
        h(
          'tr',
          h('th', 'frame'),
          h('th', 'kind'),
          h('th', 'offset'),
          h('th', 'bytes'),
          h('th', 'at'),
          h('th', 'payload BLAKE3'),
        ),
        d.frames.map((f) =>
          h(
            'tr',
            h('td', f.index),
            h('td', f.kind),
            h('td', f.offset),
            h('td', f.length),
            h('td', `+${ms(f.atUs - run.startUs)}`),
            h('td.hash', f.payloadHash.slice(0, 16)),
          ),
        ),
      ),
    ),
  );
}

function actions(d) {
  const r = d.row;
  const parts = [];
  if (r.fork) {
    const code = h('code.fork-command', r.fork);
    const done = h('span.copied', { 'aria-live': 'polite' });
    const copy = h('button.copy', { type: 'button', title: 'copy the command' }, 'Copy');
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(r.fork);
      } catch {
        // Without the async clipboard (permissions), fall back to selecting the text and copying it.
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        document.execCommand('copy');
      }
      done.textContent = 'copied';
    });
    parts.push(h('div.fork', h('span.k', 'Fork here'), code, copy, done));
  }
  if (d.temporalUrl)
    parts.push(
      h(
        'div.tlink',
        h(
          'a.temporal',
          { href: d.temporalUrl, target: '_blank', rel: 'noopener noreferrer' },
          'Run in Temporal Web UI ↗',
        ),
      ),
    );
  return parts.length ? h('div.actions', parts) : null;
}

function toolCalls(calls) {
  return (calls ?? []).map((c) =>
    h('div.toolcall', h('span.k', '→ call '), h('b', c.name), h('pre', text(c.arguments))),
  );
}

function llmSection(l) {
  const messages = l.messages.map((m, i) =>
    h(
      `div.msg.${String(m?.role ?? 'unknown').replace(/\W/g, '')}`,
      { 'data-index': i },
      h('div.role', m?.role ?? '?', m?.name ? ` · ${m.name}` : '', m?.toolCallId ? ` · ${m.toolCallId}` : ''),
      h('div.content', text(m?.content ?? (m?.role ? '' : m))),
      toolCalls(m?.toolCalls),
    ),
  );
  const response = l.response;
  return h(
    'section.llm',
    h(
      'h3',
      `Conversation (${l.messages.length} message${l.messages.length === 1 ? '' : 's'}) → ${l.provider} ${l.model}`,
    ),
    h(
      'p.facts',
      Object.entries(l.params)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => `${k} ${v}`)
        .join(' · '),
      l.tools ? ` · ${l.tools} tools offered` : '',
    ),
    l.system !== undefined ? h('div.msg.system', h('div.role', 'system'), h('div.content', l.system)) : null,
    h('div.chat', messages),
    response
      ? h(
          'div.msg.assistant.response',
          h('div.role', `assistant · response from ${response.model} · ${response.finishReason}`),
          h('div.content.final', response.text),
          toolCalls(response.toolCalls),
        )
      : h('p.note', 'No response on the tape for this step.'),
    h(
      'section.stream',
      h('h3', `Stream playback (${l.chunks.length} chunks)`),
      playback(l.chunks, response?.text ?? ''),
    ),
  );
}

function toolSection(t) {
  return h(
    'section.tool',
    h('h3', 'Tool call'),
    h('div.toolcall', h('b', t.name), h('pre.args', text(t.args))),
    t.error !== undefined
      ? h('div.result.error', h('span.k', 'error'), h('pre', text(t.error)))
      : h('div.result', h('span.k', 'result'), h('pre', text(t.output))),
  );
}

function effect(e) {
  const p = e.payload ?? {};
  const kindClass = e.kind.replace(/\W/g, '-');
  const body = [];
  if (e.diff) {
    body.push(
      h(
        'div.filediff',
        h('div.diffhead', `${e.diff.path} — against ${e.diff.against}`),
        e.diff.against === 'nothing on the tape before'
          ? h(
              'div.note',
              'The file as it was before staging is not on the tape; every staged line shows as added.',
            )
          : null,
        h(
          'pre',
          e.diff.lines.map((l) =>
            h(`span.dl.${l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx'}`, `${l.op} ${l.text}\n`),
          ),
        ),
      ),
    );
  } else if (e.kind === 'sql.mutation') {
    body.push(h('pre.sql', text(p.statement)), p.params ? h('div.params', 'params ', text(p.params)) : null);
  } else if (e.kind === 'mcp.call') {
    body.push(
      h('div', h('span.k', 'server '), text(p.server), h('span.k', ' tool '), text(p.params?.name)),
      h('pre', text(p.params?.arguments)),
    );
    if (p.result !== undefined) body.push(h('div.result', h('span.k', 'result'), h('pre', text(p.result))));
    if (p.error !== undefined)
      body.push(h('div.result.error', h('span.k', 'error'), h('pre', text(p.error))));
  } else if (e.kind === 'shell.exec') {
    body.push(h('pre', `$ ${text(p.argv)}\n${text(p.stdout)}${p.stderr ? `\n${text(p.stderr)}` : ''}`));
  }
  return h(
    `div.effect.${kindClass}`,
    { 'data-kind': e.kind, 'data-frame': e.frame },
    h(
      'div.ehead',
      h(`span.mark.${kindClass}`, e.kind),
      ' ',
      h('span.summary', e.summary),
      h('span.frame', ` frame ${e.frame}`),
    ),
    body,
    h('details.json', h('summary', 'payload'), h('pre', text(p))),
  );
}
