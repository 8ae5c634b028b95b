//! A set of weekdays, written in settings as a list such as
//! `["mon", "tue"]` or the shorthands `"weekdays"`, `"weekends"`, `"every_day"`.

use chrono::Weekday;
use serde::{Deserialize, Serialize};

use super::WindowError;

const NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Days of the week a rule runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "DaysSetting", into = "Vec<String>")]
pub struct Days(u8);

impl Days {
    pub const NONE: Days = Days(0);
    pub const WEEKDAYS: Days = Days(0b001_1111);
    pub const WEEKENDS: Days = Days(0b110_0000);
    pub const EVERY_DAY: Days = Days(0b111_1111);

    pub fn of(days: &[Weekday]) -> Days {
        Days(days.iter().fold(0, |acc, d| acc | bit(*d)))
    }

    pub fn contains(self, day: Weekday) -> bool {
        self.0 & bit(day) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn with(self, day: Weekday) -> Days {
        Days(self.0 | bit(day))
    }

    /// Builds from bits, Monday = bit 0 (higher bits ignored).
    pub fn from_bits(bits: u8) -> Days {
        Days(bits & Days::EVERY_DAY.0)
    }

    /// Parses one name (`mon`, `Monday`, ...) or a shorthand.
    pub fn parse(name: &str) -> Result<Days, WindowError> {
        let lower = name.trim().to_ascii_lowercase();
        match lower.as_str() {
            "weekdays" => return Ok(Days::WEEKDAYS),
            "weekends" => return Ok(Days::WEEKENDS),
            "every_day" | "everyday" | "daily" => return Ok(Days::EVERY_DAY),
            _ => {}
        }
        lower
            .parse::<Weekday>()
            .map(|d| Days::NONE.with(d))
            .map_err(|_| WindowError::BadDay(name.chars().take(16).collect()))
    }
}

fn bit(day: Weekday) -> u8 {
    1 << day.num_days_from_monday()
}

#[derive(Deserialize)]
#[serde(untagged)]
enum DaysSetting {
    One(String),
    Many(Vec<String>),
}

impl TryFrom<DaysSetting> for Days {
    type Error = WindowError;
    fn try_from(setting: DaysSetting) -> Result<Self, Self::Error> {
        let names = match setting {
            DaysSetting::One(name) => vec![name],
            DaysSetting::Many(names) => names,
        };
        names.iter().try_fold(Days::NONE, |acc, name| {
            Ok(Days(acc.0 | Days::parse(name)?.0))
        })
    }
}

impl From<Days> for Vec<String> {
    fn from(days: Days) -> Self {
        (0..7)
            .filter(|i| days.0 & (1 << i) != 0)
            .map(|i| NAMES[i].to_string())
            .collect()
    }
}
