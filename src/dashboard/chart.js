// The chart (uPlot). Dragging across it zooms in; a double click zooms out. A refresh keeps a zoom.

import { $, dateTimeFormat, forget, formatNumber, h, renderIfChanged } from './dom.js'
import { requestRefresh, state } from './state.js'

const RANGE_LABELS = { 60: 'Last hour', 360: 'Last 6 hours', 1440: 'Last 24 hours', 10080: 'Last 7 days' }
/**
 * The chart's lines. Staged is a shaded area with a dashed edge and Created a solid line over it:
 * in a run that stages and creates each account in the same minute the two are equal, and a line
 * drawn exactly over another would hide it. `total`: what the chart's totals call each count.
 */
const SERIES = [
  {
    key: 'staged',
    label: 'Staged (area)',
    total: 'staged',
    color: '#2563eb',
    fill: 'rgba(37, 99, 235, 0.16)',
    dash: [6, 4],
    width: 2
  },
  { key: 'created', label: 'Created', total: 'created', color: '#15803d', width: 2 },
  { key: 'failed', label: 'Failed requests', total: 'failed requests', color: '#dc2626', width: 1.5 }
]

let chart = null
let chartZoomed = false
let chartObserver = null

function chartSize() {
  const width = Math.max(280, Math.floor($('chart').clientWidth))
  return { width, height: 180 }
}

function createChart(data) {
  const axis = {
    stroke: '#5b6878',
    grid: { stroke: '#e7ecf2', width: 1 },
    ticks: { stroke: '#d5dde6', width: 1 },
    font: '11px system-ui, sans-serif'
  }
  const UPlot = window.uPlot
  chart = new UPlot(
    {
      ...chartSize(),
      cursor: { drag: { x: true, y: false }, points: { size: 6 } },
      legend: { live: true },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
      axes: [
        axis,
        {
          ...axis,
          size: yAxisWidth,
          incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000],
          values: (_u, ticks) => ticks.map(formatNumber)
        }
      ],
      series: [
        { label: 'Minute', value: (_u, v) => (v == null ? '–' : dateTimeFormat.format(new Date(v * 1000))) },
        ...SERIES.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: s.width,
          ...(s.fill ? { fill: s.fill } : {}),
          ...(s.dash ? { dash: s.dash } : {}),
          paths: UPlot.paths.stepped({ align: 1 }),
          // Minutes with activity get a dot, so a single busy minute shows (unless there are many).
          points: { show: false, size: 5, width: 1, fill: s.color, filter: activeMinutes },
          value: (_u, v) => (v == null ? '–' : formatNumber(v))
        }))
      ],
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width > 0) chartZoomed = true
          }
        ]
      }
    },
    data,
    $('chart')
  )
  chart.over.addEventListener('dblclick', () => {
    chartZoomed = false
  })
  chartObserver = new ResizeObserver(() => {
    if (chart) chart.setSize(chartSize())
  })
  chartObserver.observe($('chart'))
}

// As wide as the longest count on the axis ("20,000" needs more room than "40").
function yAxisWidth(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx]
  if (cycleNum > 1) return axis._size
  const longest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), '')
  u.ctx.font = axis.font[0]
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / window.devicePixelRatio) + 4
}

function activeMinutes(u, seriesIdx) {
  const values = u.data[seriesIdx]
  const active = []
  for (let i = 0; i < values.length; i++) {
    if (values[i] > 0) active.push(i)
    if (active.length > 300) return null
  }
  return active
}

export function destroyChart() {
  chartObserver?.disconnect()
  chartObserver = null
  chart?.destroy()
  chart = null
  chartZoomed = false
  $('chart').replaceChildren()
  forget($('chart-totals'))
}

export function renderChart(timeline, minutes) {
  const data = [timeline.map((m) => Date.parse(m.minute) / 1000), ...SERIES.map((s) => timeline.map((m) => m[s.key]))]
  if (!chart) createChart(data)
  else chart.setData(data, !chartZoomed)
  $('chart').removeAttribute('aria-busy')
  const totals = SERIES.map((s) => [s, timeline.reduce((n, m) => n + m[s.key], 0)])
  renderIfChanged($('chart-totals'), JSON.stringify([minutes, totals.map(([, n]) => n)]), () => [
    h('span', 'range-label', `${RANGE_LABELS[minutes] ?? `Last ${minutes} minutes`}:`),
    ...totals.map(([s, n]) => {
      const total = h('span', 'total', h('span', 'swatch'), h('strong', null, formatNumber(n)), ` ${s.total}`)
      total.dataset.total = s.key
      total.firstChild.dataset.series = s.key
      return total
    })
  ])
}

export function selectRange(minutes) {
  if (minutes === state.minutes) return
  state.minutes = minutes
  for (const button of document.querySelectorAll('.range button')) {
    button.setAttribute('aria-pressed', String(Number(button.dataset.minutes) === minutes))
  }
  chartZoomed = false
  $('chart').setAttribute('aria-busy', 'true')
  requestRefresh()
}
