/** The cockpit's look, inside `<svc-pilot>`'s shadow root (custom properties let a page restyle it). */
export const PILOT_CSS = `
:host { display: block; font: 14px/1.45 system-ui, sans-serif; color: var(--svc-text, #e6e9ef); background: var(--svc-background, #10131a); }
:host([hidden]) { display: none; }
* { box-sizing: border-box; }
button, select { font: inherit; }
.bar { display: flex; flex-wrap: wrap; gap: 0.6rem 1rem; align-items: center; padding: 0.5rem 0.8rem; }
.bar .robot { font-weight: 600; }
.bar .state { color: #aab2c0; }
.bar label { display: inline-flex; gap: 0.35rem; align-items: center; color: #aab2c0; }
.bar .spacer { flex: 1; }
.stop { background: #c62828; color: #fff; border: 0; border-radius: 0.4rem; padding: 0.35rem 1.2rem; font-weight: 700; cursor: pointer; }
.stop:disabled { background: #5a2a2a; color: #bbb; cursor: default; }
.bar .driving { color: #e6e9ef; }
.bar [hidden], .prompt[hidden], .control-notice[hidden] { display: none; }
.handover-action { background: #2a3342; color: #e6e9ef; border: 1px solid #3d4a60; border-radius: 0.4rem; padding: 0.3rem 0.8rem; cursor: pointer; }
.handover-action:disabled { color: #7d8594; cursor: default; }
.handover-state:empty { display: none; }
.handover-state { margin: 0 0.8rem 0.5rem; color: #d4a72c; font-size: 0.9em; }
.prompt { display: flex; flex-wrap: wrap; gap: 0.6rem; align-items: center; margin: 0 0.8rem 0.5rem; padding: 0.6rem 0.8rem; border-radius: 0.4rem; background: #1d2a3a; border: 1px solid #4c8dd6; }
.prompt .time-left { color: #aab2c0; }
.prompt button { border: 0; border-radius: 0.4rem; padding: 0.3rem 1rem; cursor: pointer; font-weight: 600; }
.prompt .grant { background: #2e7d32; color: #fff; }
.prompt .refuse { background: #5a2a2a; color: #fff; }
.control-notice { margin: 0 0.8rem 0.5rem; padding: 0.4rem 0.8rem; border-radius: 0.4rem; background: #161a23; border: 1px solid #2a2f3a; }
.control-notice[data-kind="granted"], .control-notice[data-kind="taken"] { border-color: #2e7d32; }
.control-notice[data-kind="refused"], .control-notice[data-kind="denied"], .control-notice[data-kind="timeout"], .control-notice[data-kind="error"] { border-color: #d4a72c; }
.refusal { margin: 0 0.8rem 0.5rem; padding: 0.6rem 0.8rem; border-radius: 0.4rem; background: #3a1d1d; border: 1px solid #e5484d; }
.refusal[data-final="false"] { background: #33301b; border-color: #d4a72c; }
.refusal[hidden] { display: none; }
.refusal p { margin: 0.2rem 0 0; }
.refusal .detail { color: #aab2c0; font-size: 0.9em; overflow-wrap: anywhere; }
.main { display: flex; flex-wrap: wrap; gap: 0.8rem; padding: 0 0.8rem 0.8rem; align-items: flex-start; }
.videos { flex: 3 1 32rem; display: grid; gap: 0.5rem; grid-template-columns: 1fr; min-width: 0; }
.videos[data-layout="grid"] { grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); }
.side { flex: 1 1 18rem; display: flex; flex-direction: column; gap: 0.8rem; min-width: 0; }
.hud { display: grid; grid-template-columns: auto 1fr; gap: 0.1rem 0.8rem; margin: 0; padding: 0.5rem 0.7rem; border-radius: 0.4rem; background: #161a23; border: 1px solid #2a2f3a; font: 12px/1.5 ui-monospace, monospace; }
.hud dt { color: #8c95a6; }
.hud dd { margin: 0; overflow-wrap: anywhere; }
:host([stale]) .hud { background: #3a1414; border-color: #e5484d; }
:host([stale]) .hud [data-key="picture-age"] { color: #ff6b6b; font-weight: 700; }
details { border-radius: 0.4rem; background: #161a23; border: 1px solid #2a2f3a; padding: 0.3rem 0.7rem; }
summary { cursor: pointer; color: #aab2c0; }
figure { margin: 0.3rem 0; }
figcaption { font-size: 11px; color: #8c95a6; }
.sensor { border-top: 1px solid #2a2f3a; padding: 0.3rem 0; }
.sensor h4 { margin: 0; font-size: 0.95em; display: flex; gap: 0.6rem; align-items: baseline; }
.sensor .meta { color: #8c95a6; font-weight: 400; font-size: 0.85em; }
.sensor pre { margin: 0.2rem 0 0; max-height: 14rem; overflow: auto; font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.empty { color: #8c95a6; font-size: 0.9em; }
.dock { display: none; }
`;
