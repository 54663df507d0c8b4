"""The user's side of the telecom world: the phone (``device``) and where its owner is (``surroundings``).

Both are single-object tables (one JSON document each, see ``Docs`` in the kit). The user's tools change the
phone's settings; after each change the phone's connection is derived again (:func:`network_search`) from the SIM,
airplane mode, APN, the line's status and the network preference, as tau2-bench's telecom world does. Mobile data
works when the phone has signal and service, roaming is allowed when abroad, data is on and the data allowance is
not used up; MMS needs working data, 3G or better, no MMS over Wi-Fi calling, an MMSC URL and the messaging app's
SMS and storage permissions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from simulator.world.kit import SINGLE, Docs, ToolContext, ToolError, dumps, tool

__all__ = ["ASSERTIONS", "ENV_FUNCTIONS", "USER_TOOLS", "Phone", "default_device", "default_surroundings"]

DEFAULT_APN = {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
               "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}
DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}
MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
_SIGNAL_ICON = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}
_SPEED = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
_SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}


def default_device() -> dict[str, Any]:
    """Return a phone in its default state (every field present)."""
    return {
        "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
        "network_signal_strength": "good", "network_technology_connected": "5G",
        "network_connection_status": "connected", "battery_level": 80, "data_enabled": True,
        "roaming_enabled": False, "network_mode_preference": "4g_5g_preferred",
        "active_apn_settings": dict(DEFAULT_APN), "wifi_enabled": False, "wifi_connected": False, "wifi_ssid": None,
        "wifi_signal_strength": "none", "wifi_calling_enabled": False, "wifi_calling_mms_over_wifi": False,
        "data_saver_mode": False, "vpn_enabled_setting": False, "vpn_connected": False, "vpn_details": None,
        "app_statuses": {
            "messaging": {"app_name": "messaging",
                          "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
            "browser": {"app_name": "browser",
                        "permissions": {"sms": False, "storage": True, "phone": False, "network": True}},
        },
    }


def default_surroundings() -> dict[str, Any]:
    """Return the default surroundings (at home, good coverage, line active)."""
    return {"name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False,
            "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
            "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None}


class Phone:
    """The phone and its surroundings of one trial, loaded from and saved to the trial database.

    Args:
        ctx: the trial's tool context.
        conn: the trial's sqlite3 connection.
    """

    def __init__(self, conn: sqlite3.Connection):
        self.docs = Docs(conn)
        self._texts = (self.docs.get_text("device", SINGLE), self.docs.get_text("surroundings", SINGLE))
        dev, sur = self._texts
        self.dev: dict[str, Any] = json.loads(dev) if dev is not None else default_device()
        self.sur: dict[str, Any] = json.loads(sur) if sur is not None else default_surroundings()

    def save(self) -> None:
        """Write both documents back, each only when it changed since it was loaded (no query otherwise)."""
        texts = []
        for table, doc, text in (("device", self.dev, self._texts[0]), ("surroundings", self.sur, self._texts[1])):
            new = dumps(doc)
            texts.append(new)
            if new == text:
                continue
            if text is None:
                self.docs.put(table, SINGLE, doc)
            else:
                self.docs.conn.execute(f'UPDATE "{table}" SET doc = ? WHERE id = ?', (new, SINGLE))
        self._texts = (texts[0], texts[1])

    # --- derived state ---------------------------------------------------------------------------------
    def sim_status(self) -> str:
        """Return ``missing`` when the SIM is out, else its status (active, locked_pin, locked_puk)."""
        return "missing" if self.dev["sim_card_missing"] else str(self.dev["sim_card_status"])

    def network_search(self) -> None:
        """Derive connection status, technology and signal from SIM, preference, airplane mode, APN and line."""
        d, s = self.dev, self.sur
        if self.sim_status() == "active":
            pref = d["network_mode_preference"]
            signal = s["signal_strength"]
            if pref == "4g_5g_preferred":
                tech = "4G" if signal.get("5G", "none") == "none" else "5G"
            else:
                tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(pref, "4G")
            d.update(network_connection_status="connected", network_technology_connected=tech,
                     network_signal_strength=signal.get(tech, "none"))
        else:
            self._no_service()
        if d["airplane_mode"] or d["active_apn_settings"].get("apn_name") == "broken" or not s["line_active"]:
            self._no_service()

    def _no_service(self) -> None:
        self.dev.update(network_connection_status="no_service", network_technology_connected="none",
                        network_signal_strength="none")

    def data_works(self) -> bool:
        """Return whether mobile data works now."""
        d, s = self.dev, self.sur
        if d["airplane_mode"] or d["network_signal_strength"] == "none":
            return False
        if d["network_connection_status"] == "no_service":
            return False
        if s["is_abroad"] and not (d["roaming_enabled"] and s["roaming_allowed"]):
            return False
        return bool(d["data_enabled"]) and not s["mobile_data_usage_exceeded"]

    def speed(self) -> tuple[float | None, str]:
        """Return ``(Mbps, description)`` of a speed test; ``(None, "No Connection")`` without data."""
        if not self.data_works():
            return None, "No Connection"
        d = self.dev
        factor = 0.1 if d["vpn_connected"] and (d["vpn_details"] or {}).get("server_performance") == "poor" else 1.0
        if d["data_saver_mode"]:
            factor *= 0.2
        low, high = _SPEED.get(d["network_technology_connected"], (0.0, 0.0))
        mbps = round((low + high) / 2.0 * _SIGNAL_FACTOR.get(d["network_signal_strength"], 0.0) * factor, 2)
        for bound, desc in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
            if mbps < bound:
                return mbps, desc
        return mbps, "Excellent"

    def can_send_mms(self) -> bool:
        """Return whether the messaging app can send MMS."""
        d = self.dev
        if not self.data_works() or d["network_technology_connected"] == "2G":
            return False
        if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
            return False
        if d["active_apn_settings"].get("mmsc_url") is None:
            return False
        app = d["app_statuses"].get("messaging")
        return app is not None and bool(app["permissions"].get("storage")) and bool(app["permissions"].get("sms"))

    def status_bar(self) -> str:
        """Return the status bar line."""
        d = self.dev
        parts = []
        if d["airplane_mode"]:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_ICON.get(d["network_signal_strength"], "📵 No Signal"))
            connected = d["network_technology_connected"] != "none"
            if connected:
                parts.append(d["network_technology_connected"])
            if d["data_enabled"] and connected:
                parts.append("📱 Data Enabled")
                if d["data_saver_mode"]:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if d["wifi_enabled"] and d["wifi_connected"]:
            parts.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
        if d["vpn_connected"]:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {d['battery_level']}%")
        return "Status Bar: " + " | ".join(parts)

    # --- changes ---------------------------------------------------------------------------------------
    def toggle_airplane(self) -> bool:
        """Flip airplane mode (turning it on drops Wi-Fi and VPN) and search again; return the new state."""
        d = self.dev
        on = not d["airplane_mode"]
        d["airplane_mode"] = on
        if not on:
            d["network_connection_status"] = "searching"
        if on or d["wifi_enabled"]:
            d.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        if on:
            d.update(vpn_connected=False, vpn_details=None)
        self.network_search()
        return on

    def flip(self, field: str, search: bool = True) -> bool:
        """Flip a boolean setting (searching the network again when ``search``); return the new value."""
        self.dev[field] = not self.dev[field]
        if search:
            self.network_search()
        return bool(self.dev[field])


def _with_bar(p: Phone, text: str) -> str:
    return f"{text}\n{p.status_bar()}"


# --- the user's tools (30) ---------------------------------------------------------------------------------
@tool("read")
def check_status_bar(ctx: ToolContext) -> str:
    """Shows what icons are currently visible in your phone's status bar: signal, mobile data, Wi-Fi, battery."""
    return Phone(ctx.conn).status_bar()


@tool("read")
def check_network_status(ctx: ToolContext) -> str:
    """Checks your phone's connection to cellular networks and Wi-Fi (airplane mode, signal, type, data, roaming)."""
    p = Phone(ctx.conn)
    d = p.dev
    lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}", f"SIM Card Status: {p.sim_status()}",
             f"Cellular Connection: {d['network_connection_status']}",
             f"Cellular Signal: {d['network_signal_strength']}",
             f"Cellular Network Type: {d['network_technology_connected']}",
             f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
             f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
             f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
             f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
    if d["wifi_connected"]:
        lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
    return "\n".join(lines)


@tool("read")
def check_network_mode_preference(ctx: ToolContext) -> str:
    """Shows the current network mode preference."""
    return f"Network Mode Preference: {Phone(ctx.conn).dev['network_mode_preference']}"


@tool("write")
def set_network_mode_preference(ctx: ToolContext, mode: str) -> str:
    """Changes the type of cellular network your phone prefers to connect to (e.g., 5G, LTE/4G, 3G).

    Args:
        ctx: the trial's tool context.
        mode: one of 4g_5g_preferred, 4g_only, 3g_only, 2g_only.
    """
    p = Phone(ctx.conn)
    if mode not in MODES:
        return _with_bar(p, f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: "
                            f"{', '.join(MODES)}")
    p.dev["network_mode_preference"] = mode
    p.network_search()
    p.save()
    return _with_bar(p, f"Preferred Network Mode set to: {mode}")


@tool("read")
def run_speed_test(ctx: ToolContext) -> str:
    """Measures your current mobile internet download speed and what it is good for."""
    mbps, desc = Phone(ctx.conn).speed()
    if mbps is None:
        return f"Speed test failed: {desc}."
    advice = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
              "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
              "Fair": "Connection is okay for web browsing and some standard definition streaming.",
              "Good": "Connection is good for most activities, including HD streaming.",
              "Excellent": "Connection is very fast."}[desc]
    return f"Speed Test Result: {mbps:.2f} Mbps ({desc}). {advice}"


@tool("write")
def toggle_airplane_mode(ctx: ToolContext) -> str:
    """Toggles Airplane Mode ON or OFF (ON disconnects cellular, Wi-Fi and Bluetooth)."""
    p = Phone(ctx.conn)
    on = p.toggle_airplane()
    p.save()
    return _with_bar(p, f"Airplane Mode is now {'ON' if on else 'OFF'}.")


@tool("read")
def check_sim_status(ctx: ToolContext) -> str:
    """Checks whether your SIM card is active, missing, or locked with a PIN or PUK code."""
    status = Phone(ctx.conn).sim_status()
    return {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}.get(status, f"Unknown SIM status: {status}")


@tool("write")
def reseat_sim_card(ctx: ToolContext) -> str:
    """Removes and reinserts your SIM card; can resolve recognition issues."""
    p = Phone(ctx.conn)
    p.dev["sim_card_missing"] = False
    p.network_search()
    p.save()
    return _with_bar(p, "SIM card re-seated successfully.")


@tool("write")
def toggle_data(ctx: ToolContext) -> str:
    """Toggles your phone's mobile data ON or OFF."""
    p = Phone(ctx.conn)
    on = p.flip("data_enabled")
    p.save()
    return _with_bar(p, f"Mobile Data is now {'ON' if on else 'OFF'}.")


@tool("write")
def toggle_roaming(ctx: ToolContext) -> str:
    """Toggles Data Roaming ON or OFF (using data networks outside your carrier's coverage)."""
    p = Phone(ctx.conn)
    on = p.flip("roaming_enabled")
    p.save()
    return _with_bar(p, f"Data Roaming is now {'ON' if on else 'OFF'}.")


@tool("read")
def check_data_restriction_status(ctx: ToolContext) -> str:
    """Checks whether data-limiting features (Data Saver mode) are active."""
    on = Phone(ctx.conn).dev["data_saver_mode"]
    return "Data Saver mode is ON (limits data usage)." if on else "Data Saver mode is OFF."


@tool("write")
def toggle_data_saver_mode(ctx: ToolContext) -> str:
    """Toggles Data Saver mode ON or OFF (less data used, may reduce speed)."""
    p = Phone(ctx.conn)
    on = p.flip("data_saver_mode", search=False)
    p.save()
    return _with_bar(p, f"Data Saver Mode is now {'ON' if on else 'OFF'}.")


@tool("read")
def check_apn_settings(ctx: ToolContext) -> str:
    """Checks the APN settings your phone uses for mobile data and picture messages (MMSC URL)."""
    apn = Phone(ctx.conn).dev["active_apn_settings"]
    return (f"Current APN Name: {apn.get('apn_name') or 'Not Set'}\nMMSC URL (for picture messages): "
            f"{apn.get('mmsc_url') or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")


@tool("write")
def set_apn_settings(ctx: ToolContext, apn_settings: dict[str, Any]) -> str:
    """Sets the APN settings for the phone.

    Args:
        ctx: the trial's tool context.
        apn_settings: the settings (apn_name, mms_apn, mmsc_url, mms_proxy, mms_port, reset_at_reboot).
    """
    unknown = sorted(set(apn_settings) - set(DEFAULT_APN))
    if unknown:
        raise ToolError(f"unknown APN setting(s): {', '.join(unknown)}")
    if apn_settings.get("apn_name", "internet") not in ("internet", "broken"):
        raise ToolError(f"apn_name must be 'internet' or 'broken', got {apn_settings['apn_name']!r}")
    p = Phone(ctx.conn)
    p.dev["active_apn_settings"] = {**DEFAULT_APN, **apn_settings}
    p.network_search()
    p.save()
    return _with_bar(p, f"APN settings set to: {p.dev['active_apn_settings']['apn_name']}")


@tool("write")
def reset_apn_settings(ctx: ToolContext) -> str:
    """Resets your APN settings to the defaults (applied at the next reboot)."""
    p = Phone(ctx.conn)
    p.dev["active_apn_settings"]["reset_at_reboot"] = True
    p.network_search()
    p.save()
    return _with_bar(p, "APN settings will reset at reboot.")


@tool("read")
def check_wifi_status(ctx: ToolContext) -> str:
    """Checks whether Wi-Fi is on, which network it is connected to and the signal strength."""
    d = Phone(ctx.conn).dev
    if not d["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if d["wifi_connected"]:
        return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
    return "Wi-Fi is ON but not connected to any network."


@tool("write")
def toggle_wifi(ctx: ToolContext) -> str:
    """Toggles your phone's Wi-Fi radio ON or OFF."""
    p = Phone(ctx.conn)
    if p.dev["airplane_mode"]:
        return _with_bar(p, "Cannot change Wi-Fi settings while Airplane Mode is ON.")
    on = p.flip("wifi_enabled", search=False)
    if not on:
        p.dev.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
    p.save()
    return _with_bar(p, f"Wi-Fi is now {'ON' if on else 'OFF'}.")


@tool("read")
def check_wifi_calling_status(ctx: ToolContext) -> str:
    """Checks whether Wi-Fi Calling (calls over Wi-Fi instead of the cellular network) is enabled."""
    return f"Wi-Fi Calling is currently turned {'ON' if Phone(ctx.conn).dev['wifi_calling_enabled'] else 'OFF'}."


@tool("write")
def toggle_wifi_calling(ctx: ToolContext) -> str:
    """Toggles Wi-Fi Calling ON or OFF."""
    p = Phone(ctx.conn)
    on = p.flip("wifi_calling_enabled", search=False)
    p.save()
    return _with_bar(p, f"Wi-Fi Calling is now {'ON' if on else 'OFF'}.")


@tool("read")
def check_vpn_status(ctx: ToolContext) -> str:
    """Checks whether a VPN is on and connected, with its details."""
    d = Phone(ctx.conn).dev
    if d["vpn_connected"]:
        return (f"VPN is ON and connected. Details: {d['vpn_details']}" if d["vpn_details"]
                else "VPN is ON and connected (no specific details available).")
    return "VPN is turned ON in settings, but currently not connected." if d["vpn_enabled_setting"] else (
        "VPN is turned OFF.")


@tool("write")
def connect_vpn(ctx: ToolContext) -> str:
    """Connects to your VPN."""
    p = Phone(ctx.conn)
    if p.dev["vpn_connected"]:
        return "VPN already connected."
    p.dev.update(vpn_connected=True, vpn_details=dict(DEFAULT_VPN))
    p.save()
    return _with_bar(p, "VPN connected successfully.")


@tool("write")
def disconnect_vpn(ctx: ToolContext) -> str:
    """Disconnects any active VPN connection."""
    p = Phone(ctx.conn)
    if not p.dev["vpn_connected"]:
        return _with_bar(p, "No active VPN connection to disconnect.")
    p.dev.update(vpn_connected=False, vpn_details=None)
    p.save()
    return _with_bar(p, "VPN disconnected successfully.")


@tool("read")
def check_installed_apps(ctx: ToolContext) -> str:
    """Returns the names of all apps installed on the phone."""
    return "The following apps are installed on the phone: " + ", ".join(Phone(ctx.conn).dev["app_statuses"])


def _granted(app: dict[str, Any]) -> list[str]:
    return [name.replace("_", " ").lower() for name, ok in app["permissions"].items() if ok]


@tool("read")
def check_app_status(ctx: ToolContext, app_name: str) -> str:
    """Checks an app's details, including its permissions.

    Args:
        ctx: the trial's tool context.
        app_name: the app's name (e.g. messaging).
    """
    app = Phone(ctx.conn).dev["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    granted = _granted(app)
    lines = [f"Status for App: {app_name}"]
    lines += [" - Permissions Granted:", *(f"   - {g}" for g in granted)] if granted else [
        " - Permissions: None granted."]
    return "\n".join(lines)


@tool("read")
def check_app_permissions(ctx: ToolContext, app_name: str) -> str:
    """Checks which permissions an app has (storage, SMS, phone, network).

    Args:
        ctx: the trial's tool context.
        app_name: the app's name (e.g. messaging).
    """
    app = Phone(ctx.conn).dev["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    granted = _granted(app)
    return (f"App '{app_name}' has permission for: {', '.join(granted)}." if granted
            else f"App '{app_name}' currently has no permissions granted.")


@tool("write")
def grant_app_permission(ctx: ToolContext, app_name: str, permission: str) -> str:
    """Gives an app a permission (like storage or SMS) it needs to work.

    Args:
        ctx: the trial's tool context.
        app_name: The name of the app to grant the permission to.
        permission: The permission to grant, should be lowercase.
    """
    p = Phone(ctx.conn)
    app = p.dev["app_statuses"].get(app_name)
    perm = permission.lower()
    if app is None:
        return _with_bar(p, f"Error. App '{app_name}' not found. Cannot grant permission.")
    if perm not in app["permissions"]:
        return _with_bar(p, f"Error. Permission '{perm}' not tracked for app '{app_name}', available permissions: "
                            f"{list(app['permissions'])}")
    app["permissions"][perm] = True
    p.save()
    return _with_bar(p, f"Success. Permission '{perm}' granted to app '{app_name}'.")


@tool("read")
def can_send_mms(ctx: ToolContext) -> str:
    """Checks whether the default messaging app can send MMS (picture) messages."""
    ok = Phone(ctx.conn).can_send_mms()
    return "Your messaging app can send MMS messages." if ok else "Your messaging app cannot send MMS messages."


@tool("write")
def reboot_device(ctx: ToolContext) -> str:
    """Restarts your phone (applies a pending APN reset and searches the network again)."""
    p = Phone(ctx.conn)
    lines = []
    if p.dev["active_apn_settings"].get("reset_at_reboot"):
        lines.append("Resetting APN settings...")
        p.dev["active_apn_settings"] = dict(DEFAULT_APN)
    lines.append("Restarting network services...")
    p.dev["network_connection_status"] = "searching"
    p.network_search()
    p.save()
    return _with_bar(p, "\n".join(lines))


@tool("read")
def check_payment_request(ctx: ToolContext) -> str:
    """Checks whether the agent has sent you a payment request."""
    req = Phone(ctx.conn).sur["payment_request"]
    if req is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {req['bill_id']} of {req['amount_due']} USD."


@tool("write")
def make_payment(ctx: ToolContext) -> str:
    """Pays the bill the agent sent you a payment request for."""
    p = Phone(ctx.conn)
    req = p.sur["payment_request"]
    if req is None:
        return "You do not have a payment request."
    req["paid"] = True
    p.save()
    return f"Payment of {req['amount_due']} USD has been made for bill {req['bill_id']}."


USER_TOOLS = [check_status_bar, check_network_status, check_network_mode_preference, set_network_mode_preference,
              run_speed_test, toggle_airplane_mode, check_sim_status, reseat_sim_card, toggle_data, toggle_roaming,
              check_data_restriction_status, toggle_data_saver_mode, check_apn_settings, set_apn_settings,
              reset_apn_settings, check_wifi_status, toggle_wifi, check_wifi_calling_status, toggle_wifi_calling,
              check_vpn_status, connect_vpn, disconnect_vpn, check_installed_apps, check_app_status,
              check_app_permissions, grant_app_permission, can_send_mms, reboot_device, check_payment_request,
              make_payment]
"""The user's 30 tools, in tau2's order."""


# --- environment functions (setup actions), user side ------------------------------------------------------
def _env(change: Callable[..., str | None]) -> Callable[..., str]:
    def run(ctx: ToolContext, **arguments: Any) -> str:
        p = Phone(ctx.conn)
        out = change(p, **arguments)
        p.save()
        return out or "done"
    return run


def _set_user_info(p: Phone, name: str, phone_number: str) -> None:
    p.sur.update(name=name, phone_number=phone_number)


def _set_user_location(p: Phone, abroad: bool) -> None:
    p.sur["is_abroad"] = bool(abroad)


def _set(field: str, value: bool, search: bool = True) -> Callable[[Phone], None]:
    """A setter as τ³'s: flip the setting, and flip it back once more when that missed ``value``.

    So the setting is flipped at least once, and the network searched again after each flip (when ``search``),
    even when it already had ``value``: τ³'s ``turn_roaming_off`` on a phone with roaming off still re-reads the
    signal.
    """
    def change(p: Phone) -> None:
        if p.flip(field, search=search) != value:
            p.flip(field, search=search)
    return change


def _turn_data_on(p: Phone) -> None:
    p.dev["data_enabled"] = True


def _airplane(value: bool) -> Callable[[Phone], None]:
    """Airplane mode on or off as τ³ sets it: toggle, and toggle again when that missed ``value``."""
    def change(p: Phone) -> None:
        if p.toggle_airplane() != value:
            p.toggle_airplane()
    return change


def _set_mode(p: Phone, mode: str) -> None:
    if mode not in MODES:
        raise ToolError(f"unknown network mode {mode!r}")
    p.dev["network_mode_preference"] = mode
    p.network_search()


def _break_vpn(p: Phone) -> None:
    if not p.dev["vpn_connected"]:
        p.dev.update(vpn_connected=True, vpn_details=dict(DEFAULT_VPN))
    p.dev["vpn_details"]["server_performance"] = "poor"


def _unseat_sim(p: Phone) -> None:
    p.dev["sim_card_missing"] = True
    p.network_search()


def _lock_sim(p: Phone, mode: str) -> None:
    if mode not in ("pin", "puk"):
        raise ToolError(f"lock mode must be 'pin' or 'puk', got {mode!r}")
    p.dev["sim_card_status"] = f"locked_{mode}"
    p.network_search()


def _break_apn(p: Phone) -> None:
    p.dev["active_apn_settings"]["apn_name"] = "broken"
    p.network_search()


def _break_apn_mms(p: Phone) -> None:
    p.dev["active_apn_settings"]["mmsc_url"] = None


def _set_wifi_calling(p: Phone, enabled: bool, mms_over_wifi: bool | None = None) -> None:
    p.dev["wifi_calling_enabled"] = bool(enabled)
    if mms_over_wifi is not None:
        p.dev["wifi_calling_mms_over_wifi"] = bool(mms_over_wifi)


def _remove_permission(p: Phone, app_name: str, permission: str) -> None:
    app = p.dev["app_statuses"].get(app_name)
    if app is None or permission.lower() not in app["permissions"]:
        raise ToolError(f"app {app_name!r} has no permission {permission!r}")
    app["permissions"][permission.lower()] = False


ENV_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "set_user_info": _env(_set_user_info), "set_user_location": _env(_set_user_location),
    "turn_roaming_on": _env(_set("roaming_enabled", True)), "turn_roaming_off": _env(_set("roaming_enabled", False)),
    "turn_data_on": _env(_turn_data_on), "turn_data_off": _env(_set("data_enabled", False)),
    "turn_data_saver_mode_on": _env(_set("data_saver_mode", True, search=False)),
    "turn_data_saver_mode_off": _env(_set("data_saver_mode", False, search=False)),
    "turn_airplane_mode_on": _env(_airplane(True)), "turn_airplane_mode_off": _env(_airplane(False)),
    "simulate_network_search": _env(Phone.network_search), "set_network_mode_preference": _env(_set_mode),
    "break_vpn": _env(_break_vpn), "unseat_sim_card": _env(_unseat_sim), "lock_sim_card": _env(_lock_sim),
    "break_apn_settings": _env(_break_apn), "break_apn_mms_setting": _env(_break_apn_mms),
    "set_wifi_calling": _env(_set_wifi_calling), "remove_app_permission": _env(_remove_permission),
}
"""Non-tool functions a task's setup may call on the user's side (tau2's ``initialization_actions``)."""


# --- assertion functions, user side --------------------------------------------------------------------------
def _check(read: Callable[..., bool]) -> Callable[..., bool]:
    def run(ctx: ToolContext, **arguments: Any) -> bool:
        return read(Phone(ctx.conn), **arguments)
    return run


def _internet_speed(p: Phone, expected_speed: float, expected_desc: str | None = None) -> bool:
    mbps, desc = p.speed()
    fast = (mbps or 0.0) >= expected_speed
    return fast if expected_desc is None else fast and desc.lower() == expected_desc.lower()


ASSERTIONS: dict[str, Callable[..., bool]] = {
    "assert_airplane_mode_status": _check(lambda p, expected_status: p.dev["airplane_mode"] == expected_status),
    "assert_service_status": _check(
        lambda p, expected_status: p.dev["network_connection_status"] == expected_status),
    "assert_mobile_data_status": _check(lambda p, expected_status: p.data_works() == expected_status),
    "assert_mobile_roaming_status": _check(lambda p, expected_status: p.dev["roaming_enabled"] == expected_status),
    "assert_mobile_data_saver_mode_status": _check(
        lambda p, expected_status: p.dev["data_saver_mode"] == expected_status),
    "assert_internet_speed": _check(_internet_speed),
    "assert_internet_not_excellent": _check(lambda p: p.speed()[1].lower() != "excellent"),
    "assert_can_send_mms": _check(lambda p, expected_status: p.can_send_mms() == expected_status),
    "assert_mobile_data_usage_exceeded": _check(
        lambda p, expected_status: p.sur["mobile_data_usage_exceeded"] == expected_status),
}
"""The user-side assertion functions (9)."""
